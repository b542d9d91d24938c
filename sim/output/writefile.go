package output

import (
	"bufio"
	"io"
)

// WriteFileAtomic writes the file at path through fn, atomically as every
// output file is written (a temporary name in the same directory, synced and
// renamed): on any error from fn or the file system nothing new is left at
// path.
func WriteFileAtomic(path string, fn func(w io.Writer) error) error {
	return writeAtomic(path, func(w *bufio.Writer) error { return fn(w) })
}
