//go:build !linux

package hugepages

// Advise returns s: huge-page advice is Linux's (hugepages_linux.go).
func Advise[T any](s []T) []T { return s }

// Populate returns s: populating pages ahead is Linux's
// (hugepages_linux.go); elsewhere they fault on first write as before.
func Populate[T any](s []T) []T { return s }
