//go:build !linux

package parallel

// adviseHugePages does nothing outside Linux (hugepages_linux.go).
func adviseHugePages[T any]([]T) {}
