//go:build !linux

package hugepages

import "os"

// Advise returns s: huge-page advice is Linux's (hugepages_linux.go).
func Advise[T any](s []T) []T { return s }

// Populate returns s: populating pages ahead is Linux's
// (hugepages_linux.go); elsewhere they fault on first write as before.
func Populate[T any](s []T) []T { return s }

// PopulateUpTo returns 0: nothing is populated (hugepages_linux.go).
func PopulateUpTo[T any](s []T) int { return 0 }

// PageSize is the operating system's page size in bytes.
func PageSize() int { return os.Getpagesize() }
