//go:build !linux

package hugepages

// Advise returns s: huge-page advice is Linux's (hugepages_linux.go).
func Advise[T any](s []T) []T { return s }
