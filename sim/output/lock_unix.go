//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package output

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryFlock takes an exclusive flock on f without blocking.
func tryFlock(f *os.File) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL):
			return false, ErrLockUnsupported
		}
		return false, err
	}
}
