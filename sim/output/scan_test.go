package output

import (
	"errors"
	"reflect"
	"testing"
)

// TestScanTable: scanning a multi-batch file batch by batch gives the rows
// ReadTable gives, in order, with the metadata; an error from the callback
// stops the scan.
func TestScanTable(t *testing.T) {
	mem := checkedMem(t)
	path := tempPath(t, "s.arrow")
	rows := makeRows[allKinds](2*BatchRows + 3)
	if err := writeTable(mem, path, rows, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	var got []allKinds
	batches := 0
	err := scanTable(mem, path, func(meta map[string]string, b []allKinds) error {
		if meta["k"] != "v" {
			t.Errorf("metadata %v", meta)
		}
		batches++
		got = append(got, b...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if batches != 3 || !reflect.DeepEqual(got, rows) {
		t.Errorf("%d batches; rows equal: %v", batches, reflect.DeepEqual(got, rows))
	}
	stop := errors.New("stop")
	err = scanTable(mem, path, func(map[string]string, []allKinds) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("error %v, want the callback's", err)
	}
	type other struct {
		X string `arrow:"no_such_column"`
	}
	if err := ScanTable(path, func(map[string]string, []other) error { return nil }); err == nil {
		t.Error("missing column: no error")
	}
}
