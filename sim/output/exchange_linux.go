package output

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the directory entries a and b in one atomic step
// (renameat2 with RENAME_EXCHANGE, Linux 3.15+), so a reader sees either
// the old or the new directory at each name and never neither.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		return errExchangeUnsupported
	}
	return err
}
