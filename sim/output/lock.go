package output

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrLockUnsupported is returned by TryLock and WaitLock where the file
// system or the operating system has no advisory file locks (some network
// and FUSE file systems; operating systems without flock(2)). Callers go on
// without the lock and say so: concurrent writers of one output are then
// not excluded, and leftovers of killed runs are reported, not removed,
// since they might belong to a run still in progress.
var ErrLockUnsupported = errors.New("advisory file locks are not supported on this file system")

// Lock is an advisory exclusive lock on a lock file (flock(2) on Unix). It
// excludes every other Lock on the same path, in this process or another;
// the operating system releases it when the process dies, so a killed run
// never leaves a lock held. Unlock removes the lock file while still
// holding the lock, and TryLock checks after locking that its descriptor is
// still the file at the path (retrying otherwise), so removing it cannot
// let two holders lock two different files of one name; a killed run
// leaves only an unlocked file, which the next holder removes.
type Lock struct {
	f    *os.File
	path string
}

// TryLock takes the lock on path without waiting; ok is false when another
// holder has it. The file is created (mode 0644) if missing.
func TryLock(path string) (l *Lock, ok bool, err error) {
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, false, fmt.Errorf("output: lock %s: %w", path, err)
		}
		held, err := tryFlock(f)
		if err != nil {
			f.Close()
			if errors.Is(err, ErrLockUnsupported) {
				return nil, false, err
			}
			return nil, false, fmt.Errorf("output: lock %s: %w", path, err)
		}
		if !held {
			f.Close()
			return nil, false, nil
		}
		// The previous holder may have removed the file between our open
		// and our flock: then we hold a lock nobody else can see.
		mine, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(mine, now) {
			return &Lock{f: f, path: path}, true, nil
		}
		f.Close()
	}
	return nil, false, fmt.Errorf("output: lock %s: the lock file keeps being replaced", path)
}

// lockPoll is how often WaitLock retries; it bounds how late a waiting run
// notices that the lock is free or that it was interrupted.
const lockPoll = 50 * time.Millisecond

// WaitLock takes the lock on path, retrying until it is free or ctx is
// done. onWait, when not nil, is called once if the lock was held.
func WaitLock(ctx context.Context, path string, onWait func()) (*Lock, error) {
	for first := true; ; first = false {
		l, ok, err := TryLock(path)
		if err != nil || ok {
			return l, err
		}
		if first && onWait != nil {
			onWait()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// Unlock removes the lock file and releases the lock. It is safe to call
// on nil and more than once.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path) // still held: nobody can have locked this file meanwhile
	l.f.Close()       // closing the descriptor releases the flock
	l.f = nil
}
