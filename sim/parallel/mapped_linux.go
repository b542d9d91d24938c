//go:build linux

package parallel

import "syscall"

// mapAnon maps n bytes of fresh, zeroed, private anonymous memory, read
// and write; the kernel gives a page only on its first touch.
func mapAnon(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
}

// unmap gives back a mapping mapAnon returned, whole.
func unmap(b []byte) error { return syscall.Munmap(b) }
