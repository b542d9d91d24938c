//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package output

import "os"

// tryFlock: this operating system has no flock(2); see ErrLockUnsupported.
func tryFlock(*os.File) (bool, error) { return false, ErrLockUnsupported }
