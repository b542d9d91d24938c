package output

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// checkedMem returns an allocator that fails the test if any Arrow buffer
// allocated through it is still live when the test ends.
func checkedMem(t *testing.T) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// fillRow sets every arrow-tagged field of the struct v from seed i:
// numbers vary with i, strings of ",dict" fields cycle through 3 values,
// plain strings are unique, and pointer fields are nil on every 3rd row.
func fillRow(v reflect.Value, i int) {
	t := v.Type()
	for fi := 0; fi < t.NumField(); fi++ {
		sf := t.Field(fi)
		tag, ok := sf.Tag.Lookup("arrow")
		if !ok || tag == "-" {
			continue
		}
		fv := v.Field(fi)
		if fv.Kind() == reflect.Pointer {
			if i%3 == 2 {
				continue
			}
			fv.Set(reflect.New(fv.Type().Elem()))
			fv = fv.Elem()
		}
		switch fv.Kind() {
		case reflect.Int, reflect.Int32, reflect.Int64:
			fv.SetInt(int64(i*7 + fi - 3))
		case reflect.Uint64:
			fv.SetUint(uint64(i)*1e12 + uint64(fi))
		case reflect.Float64:
			fv.SetFloat(float64(i)*1.25e9 + float64(fi)/3)
		case reflect.Bool:
			fv.SetBool((i+fi)%2 == 0)
		case reflect.String:
			if strings.HasSuffix(tag, ",dict") {
				fv.SetString([]string{"b-" + sf.Name, "a-" + sf.Name, "c"}[i%3])
			} else {
				fv.SetString(fmt.Sprintf("%s-%d", sf.Name, i))
			}
		}
	}
}

// builtTable returns a table builder of rows, released when the test ends.
func builtTable(t testing.TB, rows any) *tableBuilder {
	t.Helper()
	tb, err := newTableBuilder(memory.DefaultAllocator, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.release)
	return tb
}

// tableFile returns the IPC file writeIPC makes of tb's first n rows in
// record batches of batchRows.
func tableFile(t testing.TB, tb *tableBuilder, n, batchRows int) []byte {
	t.Helper()
	var file []byte
	if err := writeIPC(appendBytes{&file}, memory.DefaultAllocator, tb.schema, n, batchRows, tb.batch); err != nil {
		t.Fatal(err)
	}
	return file
}

// makeRows returns n filled rows of type T.
func makeRows[T any](n int) []T {
	rows := make([]T, n)
	for i := range rows {
		fillRow(reflect.ValueOf(&rows[i]).Elem(), i)
	}
	return rows
}

// dirEntries lists the names in dir, so tests can assert that no temporary
// file was left behind.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// makeTimeline returns n timeline rows over 4 ranks on 2 nodes and the
// streams compute, tp and dp; each (rank, stream) track is sequential.
func makeTimeline(n int) []TimelineRow {
	streams := []string{"compute", "tp", "dp"}
	kinds := map[string]string{"compute": "gemm", "tp": "all_reduce", "dp": "reduce_scatter"}
	groups := map[string]string{"compute": "", "tp": "tp", "dp": "dp"}
	next := map[[2]int]int64{}
	rows := make([]TimelineRow, n)
	for i := range rows {
		rank := i % 4
		si := (i / 4) % 3
		s := streams[si]
		k := [2]int{rank, si}
		start := next[k] + int64(i%5)
		dur := int64(1000 + (i*37)%1999)
		next[k] = start + dur
		layer := int32(i % 32)
		if i%11 == 0 {
			layer = -1
		}
		rows[i] = TimelineRow{
			Step: int32(i / 100000), Rank: int32(rank), Node: int32(rank / 2),
			Stream: s, Kind: kinds[s], Name: fmt.Sprintf("op%d", i%97),
			Layer: layer, Microbatch: int32(i % 8), Chunk: -1,
			StartNs: start, EndNs: start + dur,
			FLOPs: float64(i) * 1e9, Bytes: int64(i%4096) * 512, Group: groups[s],
		}
	}
	return rows
}

// testDicts orders the three dictionaries differently from each other and
// from makeTimeline's row order, so a mix-up between the columns' indices
// cannot go unnoticed.
var testDicts = TimelineDicts{
	Stream: []string{"compute", "tp", "dp"},
	Kind:   []string{"reduce_scatter", "gemm", "all_reduce"},
	Group:  []string{"tp", "dp", ""},
}

func tempPath(t *testing.T, name string) string {
	return filepath.Join(t.TempDir(), name)
}
