package output

import (
	"reflect"
	"testing"
)

func TestParquetRoundTrip(t *testing.T) {
	mem := checkedMem(t)
	for _, n := range []int{0, 3, BatchRows + 7} {
		path := tempPath(t, "s.parquet")
		rows := makeRows[allKinds](n)
		if err := writeParquet(mem, path, rows, map[string]string{"run_id": "r"}); err != nil {
			t.Fatal(err)
		}
		var got []allKinds
		meta, err := readParquet(mem, path, &got)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && !reflect.DeepEqual(got, rows) || len(got) != n {
			t.Errorf("%d rows: round trip differs", n)
		}
		if want := map[string]string{"run_id": "r", "schema_version": SchemaVersion}; !reflect.DeepEqual(meta, want) {
			t.Errorf("metadata %v, want %v", meta, want)
		}
	}
}

func TestParquetTimeline(t *testing.T) {
	rows := makeTimeline(1000)
	path := tempPath(t, "t.parquet")
	if err := WriteParquet(path, rows, nil); err != nil {
		t.Fatal(err)
	}
	var got []TimelineRow
	if _, err := ReadParquet(path, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Error("round trip differs")
	}
}
