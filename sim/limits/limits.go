// Package limits holds the bounds simtrain puts on what it is given: how many
// bytes of an input file it reads, and what a name must look like before it
// becomes a directory under an output folder.
//
// Both exist because a careless or hostile input must fail with a one-line
// error instead of running away or touching files it should not: a scenario
// "file" that is /dev/zero is read until memory runs out, and a scenario
// named ".." turns OUT/<name> into OUT's parent (issue 19).
package limits

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxInputBytes bounds a scenario or sweep file. The largest bundled file
// is about 5 KB; 1 MiB is 200 times that, and reading it takes microseconds.
const MaxInputBytes = 1 << 20

// ReadFile reads at most max bytes of path and fails if there are more. It
// reads through a limited reader rather than trusting the size the file
// system reports, so devices and pipes (/dev/zero, /dev/stdin) stop at
// max+1 bytes instead of being read to the end.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		switch {
		case st.IsDir():
			return nil, fmt.Errorf("%s: is a directory, not a file", path)
		case st.Mode().IsRegular() && st.Size() > max:
			return nil, fmt.Errorf("%s: %d bytes is larger than the %s a scenario or sweep file may hold", path, st.Size(), sizeString(max))
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than the %s a scenario or sweep file may hold", path, sizeString(max))
	}
	return data, nil
}

func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// NameMax is the longest file name (one path component, in bytes) that the
// usual file systems hold: NAME_MAX is 255 on ext4, XFS, btrfs, ZFS, tmpfs
// and APFS.
const NameMax = 255

// MaxNameLen is the longest scenario or sweep name. simtrain run writes a
// scenario's files into a temporary directory ".NAME.tmp-" + a random
// decimal uint32 (at most 10 digits; output.WriteDir) before renaming it to
// NAME, so NAME needs room for 16 more bytes within NameMax.
const MaxNameLen = NameMax - len(".") - len(".tmp-") - 10

// nameChars reports whether name holds only letters, digits, '.', '_' and
// '-' (ASCII): a byte loop, not a regexp, since every sweep point's plan
// checks its name (a regexp match was ≈ 8,400 instructions a point).
func nameChars(name string) bool {
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// NameRule says in words what CheckName accepts.
const NameRule = "letters, digits, '.', '_' and '-', not starting with '.', at most 239 characters"

// CheckName checks that name can be one path component under an output
// folder: it is not empty, holds only letters, digits, '.', '_' and '-',
// does not start with '.' (so it is never "." or "..", and never one of the
// hidden names the run writer uses beside it: .NAME.tmp-*, .NAME.lock), and
// is at most MaxNameLen bytes. field names the input in the error
// ("name"); the error is one line.
func CheckName(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: required (%s)", field, NameRule)
	case name == "." || name == "..":
		return fmt.Errorf("%s: %q is not a name: it would turn the output directory OUT/%s into OUT itself or its parent (%s)", field, name, name, NameRule)
	case !nameChars(name):
		return fmt.Errorf("%s: %q may contain only letters, digits, '.', '_' and '-'", field, clip(name))
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%s: %q must not start with '.' (hidden names beside an output directory are simtrain's temporary and lock files)", field, name)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%s: %d characters is longer than %d: the output directory and its temporary name must fit the file system's %d-byte limit on a file name", field, len(name), MaxNameLen, NameMax)
	}
	return nil
}

// clip shortens a hostile value for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
