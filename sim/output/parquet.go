package output

// Parquet support lives in this one file: it pulls in the parquet and
// compression packages of arrow-go, which cost about +100 s of cold compile
// and +40 MB of binary on the project's 2-core machines (go-notes.md §1a,
// "Measurements"). Moving this file behind a build tag or into its own
// package removes that cost from builds that do not need Parquet.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// WriteParquet writes rows (a slice of arrow-tagged structs, as for
// [WriteTable]) to path as a Parquet file compressed with zstd, one row group
// per [BatchRows] rows. The Arrow schema is stored in the file (key
// "ARROW:schema"), so dictionary columns read back as dictionaries, and the
// schema metadata (schema_version and meta) becomes the file's key-value
// metadata. The write is atomic.
func WriteParquet(path string, rows any, meta map[string]string) error {
	return writeParquet(memory.DefaultAllocator, path, rows, meta)
}

func writeParquet(mem memory.Allocator, path string, rows any, meta map[string]string) error {
	tb, err := newTableBuilder(mem, rows, meta)
	if err != nil {
		return err
	}
	defer tb.release()
	return writeAtomic(path, func(w *bufio.Writer) error {
		props := parquet.NewWriterProperties(
			parquet.WithCompression(compress.Codecs.Zstd),
			parquet.WithAllocator(mem),
			parquet.WithMaxRowGroupLength(BatchRows),
		)
		arrProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem))
		pw, err := pqarrow.NewFileWriter(tb.schema, w, props, arrProps)
		if err != nil {
			return fmt.Errorf("output: write %s: %w", path, err)
		}
		for lo := 0; lo < tb.n; lo += BatchRows {
			rec := tb.batch(lo, min(lo+BatchRows, tb.n))
			err := pw.Write(rec)
			rec.Release()
			if err != nil {
				pw.Close()
				return fmt.Errorf("output: write %s: %w", path, err)
			}
		}
		if err := pw.Close(); err != nil {
			return fmt.Errorf("output: write %s: %w", path, err)
		}
		return nil
	})
}

// ReadParquet reads a Parquet file into out (*[]T, as for [ReadTable]) and
// returns the file's key-value metadata without the stored Arrow schema.
func ReadParquet(path string, out any) (map[string]string, error) {
	return readParquet(memory.DefaultAllocator, path, out)
}

func readParquet(mem memory.Allocator, path string, out any) (map[string]string, error) {
	pv := reflect.ValueOf(out)
	if pv.Kind() != reflect.Pointer || pv.IsNil() || pv.Elem().Kind() != reflect.Slice || pv.Elem().Type().Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("output: ReadParquet out must be a non-nil *[]struct, got %T", out)
	}
	spec, err := specOf(pv.Elem().Type().Elem())
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("output: read %w", err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, fmt.Errorf("output: read %s: not a Parquet file: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: BatchRows}, mem)
	if err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, err)
	}
	meta := map[string]string{}
	kv := pf.MetaData().KeyValueMetadata()
	for i, k := range kv.Keys() {
		if k != "ARROW:schema" {
			meta[k] = kv.Values()[i]
		}
	}
	sc, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, err)
	}
	cols, err := spec.match(sc)
	if err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, err)
	}
	defer rr.Release()
	res := reflect.New(pv.Elem().Type()).Elem()
	for rr.Next() {
		if err := spec.decode(rr.RecordBatch(), cols, &res); err != nil {
			return nil, fmt.Errorf("output: read %s: %w", path, err)
		}
	}
	if err := rr.Err(); err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, err)
	}
	pv.Elem().Set(res)
	return meta, nil
}
