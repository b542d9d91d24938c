//go:build !linux

package parallel

import "errors"

// errNoMapping makes mappedSlice fall back to the heap where anonymous
// mappings are not used (only Linux's are: mapped_linux.go).
var errNoMapping = errors.New("parallel: no anonymous mappings on this OS")

func mapAnon(int) ([]byte, error) { return nil, errNoMapping }

func unmap([]byte) error { return errNoMapping }
