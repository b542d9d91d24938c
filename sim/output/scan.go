package output

import (
	"fmt"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ScanTable reads the Arrow IPC file at path one record batch at a time and
// calls fn with the file's schema metadata and the batch's rows, decoded as
// [ReadTable] decodes them. The rows slice is reused by the next call, so a
// timeline of any length is read in the memory of one batch; fn keeps what
// it needs by copying. An error from fn stops the scan and is returned.
func ScanTable[T any](path string, fn func(meta map[string]string, rows []T) error) error {
	return scanTable(memory.DefaultAllocator, path, fn)
}

func scanTable[T any](mem memory.Allocator, path string, fn func(meta map[string]string, rows []T) error) error {
	spec, err := specOf(reflect.TypeFor[T]())
	if err != nil {
		return err
	}
	return withFileReader(mem, path, func(r *ipc.FileReader) error {
		meta := metadataMap(r.Schema().Metadata())
		cols, err := spec.match(r.Schema())
		if err != nil {
			return versionMismatch(meta, err)
		}
		var rows []T
		res := reflect.ValueOf(&rows).Elem()
		for b := 0; b < r.NumRecords(); b++ {
			rec, err := r.RecordBatch(b)
			if err != nil {
				return err
			}
			clear(rows)
			res.SetLen(0)
			if err := spec.decode(rec, cols, &res); err != nil {
				return err
			}
			if err := fn(meta, rows[:res.Len()]); err != nil {
				return fmt.Errorf("batch %d: %w", b, err)
			}
		}
		return nil
	})
}
