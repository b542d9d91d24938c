package output

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/simtrain/simtrain/sim/limits"
)

// ErrUnsafeOutput is wrapped by every error of WriteDir that refuses to
// write because the output would leave OUT or replace something simtrain
// did not write (the CLI reports it as bad input, exit status 2).
var ErrUnsafeOutput = errors.New("unsafe output path")

// errExchangeUnsupported is returned by exchange where the platform cannot
// swap two names atomically.
var errExchangeUnsupported = errors.New("atomic exchange not supported")

// DirOptions adjust WriteDir.
type DirOptions struct {
	// Owned reports whether an entry of an existing OUT/NAME is a file
	// simtrain writes there. WriteDir replaces the directory only when
	// every entry is a regular file it owns, so a user's notes or a
	// symbolic link put beside the results are never deleted. Nil accepts
	// only the files simtrain's commands write there (runDirFiles).
	Owned func(name string) bool
	// Warn receives one-line remarks: leftovers of killed runs removed or
	// reported, a wait for another run's lock, no lock support. Nil
	// discards them.
	Warn func(msg string)
}

// RunFiles are the files simtrain run writes into OUT/NAME.
var RunFiles = []string{"summary.arrow", "timeline.arrow", "memory.arrow", "links.arrow", "trace.json"}

// runDirFiles are the files any simtrain command writes into OUT/NAME:
// RunFiles, steps.arrow of a run with variability, goodput.arrow of
// simtrain goodput, the Parquet copies of run
// --parquet and the report.html of run --report and simtrain report.
var runDirFiles = append(slices.Clone(RunFiles), "steps.arrow", "goodput.arrow",
	"summary.parquet", "steps.parquet", "timeline.parquet", "memory.parquet", "links.parquet", "goodput.parquet", "report.html")

// ownedRunFile accepts runDirFiles and the temporary names the atomic
// writer gives them (FILE.tmp-PID-N).
func ownedRunFile(name string) bool {
	base, _, _ := strings.Cut(name, ".tmp-")
	return slices.Contains(runDirFiles, base)
}

// WriteDir writes the directory OUT/NAME as one unit. fill writes the
// files into a temporary directory; WriteDir then puts that directory at
// OUT/NAME, replacing an older one, so OUT/NAME is at every moment either
// the complete old or the complete new directory (one atomic rename swap on
// Linux, two renames elsewhere). On any error, or when ctx is cancelled,
// nothing new is left and OUT/NAME is as it was.
//
// Safety, in order:
//   - NAME is one path component (limits.CheckName) and OUT/NAME, with OUT
//     resolved through symbolic links, lies directly inside OUT;
//   - an advisory lock on OUT/.NAME.lock is held from the first look at
//     OUT/NAME to the last rename, so two runs writing the same directory
//     take turns (the later one waits) instead of racing;
//   - under the lock, the leftovers of killed runs (.NAME.tmp-DIGITS and
//     .NAME.old-DIGITS holding only simtrain's files) are removed and named
//     in a warning; without lock support they are only reported;
//   - an existing OUT/NAME is replaced only if it is a real directory
//     holding nothing but files opt.Owned accepts;
//   - directories are created 0755 and files 0644 (before the umask).
//
// It returns the directory's path (OUT resolved, joined with NAME).
func WriteDir(ctx context.Context, out, name string, opt DirOptions, fill func(tmp string) error) (string, error) {
	if opt.Owned == nil {
		opt.Owned = ownedRunFile
	}
	warn := opt.Warn
	if warn == nil {
		warn = func(string) {}
	}
	if err := limits.CheckName("name", name); err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnsafeOutput, err)
	}
	root, err := resolveOut(out)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, name)
	if filepath.Dir(dir) != root || filepath.Base(dir) != name {
		return "", fmt.Errorf("%w: %s is not directly inside %s", ErrUnsafeOutput, dir, root)
	}
	lock, err := WaitLock(ctx, filepath.Join(root, "."+name+".lock"), func() {
		warn(fmt.Sprintf("waiting for another simtrain writing %s", dir))
	})
	locked := err == nil
	switch {
	case errors.Is(err, ErrLockUnsupported):
		warn(fmt.Sprintf("cannot lock %s (%v): a concurrent run writing it is not excluded", dir, err))
	case err != nil:
		return "", err
	}
	defer lock.Unlock()
	cleanLeftovers(root, name, locked, opt.Owned, warn)
	if err := checkReplaceable(dir, opt.Owned); err != nil {
		return "", err
	}
	tmp, err := makeTempDir(root, "."+name+".tmp-")
	if err != nil {
		return "", fmt.Errorf("output: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := fill(tmp); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	syncDir(tmp)
	if err := replaceDir(tmp, dir); err != nil {
		return "", fmt.Errorf("output: %w", err)
	}
	done = true
	syncDir(root)
	return dir, nil
}

// resolveOut creates OUT (0755) and returns it absolute with symbolic
// links resolved, so later checks compare real paths.
func resolveOut(out string) (string, error) {
	if out == "" {
		out = "."
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("output: %w", err)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("output: %w", err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("output: %w", err)
	}
	return root, nil
}

// makeTempDir creates PREFIX + a random decimal uint32 in dir with mode
// 0755 (os.MkdirTemp would use 0700: the results then are unreadable to the
// user's group, which issue 19 found).
func makeTempDir(dir, prefix string) (string, error) {
	for range 1000 {
		p := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		err := os.Mkdir(p, 0o755)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("cannot create a temporary directory %s* in %s", prefix, dir)
}

// checkReplaceable refuses an existing dir that is not a real directory of
// owned regular files.
func checkReplaceable(dir string, owned func(string) bool) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if !st.IsDir() {
		what := "a file"
		if st.Mode()&fs.ModeSymlink != 0 {
			what = "a symbolic link"
		}
		return fmt.Errorf("%w: %s is %s, not a directory simtrain wrote; move it or choose another --out", ErrUnsafeOutput, dir, what)
	}
	foreign, err := foreignEntries(dir, owned)
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if len(foreign) > 0 {
		return fmt.Errorf("%w: %s holds %s, which simtrain does not write; move it out or choose another --out (the directory is replaced as a whole)",
			ErrUnsafeOutput, dir, listNames(foreign))
	}
	return nil
}

// foreignEntries lists the entries of dir that are not owned regular files.
func foreignEntries(dir string, owned func(string) bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !owned(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func listNames(names []string) string {
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

// cleanLeftovers handles what killed runs of NAME left in root: temporary
// directories .NAME.tmp-DIGITS (a run killed while writing) and
// .NAME.old-DIGITS (killed between the two renames where no atomic swap
// exists). Under the lock nobody else is writing NAME, so those holding
// only owned files are removed; the rest, and all of them without the lock,
// are reported. NAME.old-DIGITS directories that older versions of simtrain
// left are reported only: a scenario may be named like that.
func cleanLeftovers(root, name string, locked bool, owned func(string) bool, warn func(string)) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	var removed, kept, legacy []string
	for _, e := range entries {
		n := e.Name()
		switch {
		case isLeftover(n, "."+name+".tmp-") || isLeftover(n, "."+name+".old-"):
		case isLeftover(n, name+".old-"):
			legacy = append(legacy, n)
			continue
		default:
			continue
		}
		p := filepath.Join(root, n)
		if !e.IsDir() || !locked {
			kept = append(kept, n)
			continue
		}
		if foreign, err := foreignEntries(p, owned); err != nil || len(foreign) > 0 {
			kept = append(kept, n)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			kept = append(kept, n)
			continue
		}
		removed = append(removed, n)
	}
	if len(removed) > 0 {
		warn(fmt.Sprintf("removed %s in %s, left by an interrupted run", listNames(removed), root))
	}
	if len(kept) > 0 {
		why := "they hold files simtrain does not write"
		if !locked {
			why = "without a lock another run may still be writing them"
		}
		warn(fmt.Sprintf("%s in %s look like leftovers of an interrupted run; not removed because %s: delete them if no run is writing %s",
			listNames(kept), root, why, name))
	}
	if len(legacy) > 0 {
		warn(fmt.Sprintf("%s in %s look like directories an older simtrain left when two runs raced; delete them unless they are a scenario's output",
			listNames(legacy), root))
	}
}

// isLeftover reports whether n is prefix followed by one or more digits.
func isLeftover(n, prefix string) bool {
	rest, ok := strings.CutPrefix(n, prefix)
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// replaceDir puts the complete directory tmp at dir. Where the platform
// swaps two names atomically the old directory moves to tmp's name in the
// same step and is then removed; elsewhere the old directory is first
// renamed to .NAME.old-DIGITS (cleaned up by the next run if this one is
// killed in between).
func replaceDir(tmp, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(tmp, dir)
	}
	err := exchange(tmp, dir)
	if err == nil {
		// The new directory is in place; if the old one cannot be removed
		// now, the next run of NAME removes it as a leftover.
		os.RemoveAll(tmp)
		return nil
	}
	if !errors.Is(err, errExchangeUnsupported) {
		return err
	}
	old := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".old-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.Rename(old, dir)
		return err
	}
	os.RemoveAll(old) // as above: a leftover the next run removes
	return nil
}
