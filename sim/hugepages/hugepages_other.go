//go:build !linux

package hugepages

import (
	"os"
	"time"
	"unsafe"
)

// Advise returns s: huge-page advice is Linux's (hugepages_linux.go).
func Advise[T any](s []T) []T { return s }

// Populate returns s: populating pages ahead is Linux's
// (hugepages_linux.go); elsewhere they fault on first write as before.
func Populate[T any](s []T) []T { return s }

// PopulateUpTo returns s's length in bytes: nothing is populated, and a
// caller stepping through an array moves on (hugepages_linux.go).
func PopulateUpTo[T any](s []T) int {
	var zero T
	return len(s) * int(unsafe.Sizeof(zero))
}

// Map returns nil: memory outside the Go heap is mapped on Linux only
// (hugepages_linux.go); callers make theirs on the heap.
func Map(n int) []byte { return nil }

// Unmap does nothing (Map returns nothing to give back here).
func Unmap(b []byte) {}

// Populating reports false: pages are not populated ahead here.
func Populating() bool { return false }

// PageSize is the operating system's page size in bytes.
func PageSize() int { return os.Getpagesize() }

// AdviseHeap does nothing: huge-page advice is Linux's (heap_linux.go).
func AdviseHeap[T any](p *T) {}

// WatchHeap starts nothing: huge-page advice is Linux's (heap_linux.go).
func WatchHeap[T any](p *T, period time.Duration) (stop func()) { return func() {} }

// CloseWhenDear does nothing: huge-page advice is Linux's (gate_linux.go).
func CloseWhenDear() {}

// CloseWhereUnpaid does nothing: huge-page advice is Linux's
// (pays_linux.go).
func CloseWhereUnpaid() {}
