package collectives

import (
	"strings"
	"testing"
)

func TestNamesRoundTrip(t *testing.T) {
	for op := AllReduce; op < numOps; op++ {
		got, err := ParseOp(op.String())
		if err != nil || got != op {
			t.Errorf("ParseOp(%q) = %v, %v", op.String(), got, err)
		}
	}
	for a := Auto; a < numAlgos; a++ {
		got, err := ParseAlgo(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAlgo(%q) = %v, %v", a.String(), got, err)
		}
	}
	if strings.Join(OpNames(), ",") != "all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,reduce,send_recv,send" ||
		strings.Join(AlgoNames(), ",") != "auto,ring,tree,nvls,hierarchical,direct" {
		t.Errorf("names: %v %v", OpNames(), AlgoNames())
	}
	for p, want := range map[Proto]string{LL: "LL", LL128: "LL128", Simple: "Simple"} {
		if p.String() != want {
			t.Errorf("%d: %q", p, p.String())
		}
	}
	if _, err := ParseOp("allreduce"); err == nil || !strings.Contains(err.Error(), "valid: all_reduce, all_gather") {
		t.Errorf("ParseOp(allreduce): %v", err)
	}
	if _, err := ParseAlgo("pat"); err == nil || !strings.Contains(err.Error(), "valid: auto, ring, tree, nvls, hierarchical, direct") {
		t.Errorf("ParseAlgo(pat): %v", err)
	}
	if Op(200).String() != "Op(200)" || Algo(200).String() != "Algo(200)" {
		t.Error("out-of-range names")
	}
}
