package parallel

import (
	"strings"
	"testing"
)

// symStage builds a hand-made stage play: layers first and first+1, the
// entries in the order given ("F0" forward of micro-batch 0, "B1" backward
// of micro-batch 1), each a receive (activation or gradient) and one
// compute task per layer, then a send; a parameter gather before them
// all (pre), one after the first forward (begin) and a gradient reduce
// after them all (end). Every task lasts 10 ns and they run back to back
// from at; dur, when set, overrides a task's duration by its index.
func symStage(first int, at int64, order []string, dur map[int]int64) []SymTask {
	var ts []SymTask
	t := at
	put := func(k SymTask) {
		d := int64(10)
		if v, ok := dur[len(ts)]; ok {
			d = v
		}
		k.Start, k.End = t, t+d
		t += d
		ts = append(ts, k)
	}
	put(SymTask{Kind: "all_gather", Stream: "dp", Name: "dp_param_gather", Group: "dp", Layer: first, Micro: -1, Chunk: -1})
	for _, e := range order {
		m := int(e[1] - '0')
		if e[0] == 'F' {
			put(SymTask{Kind: "recv", Stream: "pp_recv_act", Name: "recv_act", Layer: -1, Micro: m, Chunk: -1})
			for l := first; l < first+2; l++ {
				put(SymTask{Kind: "forward", Stream: "compute", Name: "fwd", Layer: l, Micro: m, Chunk: -1})
				if m == 0 && l == first {
					put(SymTask{Kind: "all_gather", Stream: "dp", Name: "dp_param_gather", Group: "dp", Layer: l + 1, Micro: -1, Chunk: -1})
				}
			}
			put(SymTask{Kind: "send", Stream: "pp_send", Name: "send_act", Layer: -1, Micro: m, Chunk: -1})
			continue
		}
		put(SymTask{Kind: "recv", Stream: "pp_recv_grad", Name: "recv_grad", Layer: -1, Micro: m, Chunk: -1})
		for l := first + 1; l >= first; l-- {
			put(SymTask{Kind: "backward", Stream: "compute", Name: "bwd", Layer: l, Micro: m, Chunk: -1})
		}
		put(SymTask{Kind: "send", Stream: "pp_send", Name: "send_grad", Layer: -1, Micro: m, Chunk: -1})
	}
	put(SymTask{Kind: "all_reduce", Stream: "dp", Name: "dp_grad_reduce", Group: "dp", Layer: -1, Micro: -1, Chunk: -1})
	return ts
}

func symClasses(p StagePair) string {
	var b strings.Builder
	for _, c := range p.Classes {
		b.WriteString(c.Class)
		b.WriteString(";")
	}
	return b.String()
}

func TestCompareStagesShifted(t *testing.T) {
	order := []string{"F0", "F1", "B0", "B1"}
	a := symStage(0, 0, order, nil)
	b := symStage(2, 70, order, nil) // the same play 70 ns later, layers 2 and 3
	p := CompareStages(a, b)
	if !p.Exact() || p.OnlyA != 0 || p.OnlyB != 0 {
		t.Fatalf("a shifted copy is not exact: %+v", p)
	}
	// F0 F1 are warm (before the first backward), B0 B1 cool (after the
	// last forward); the gather is the step's begin, the reduce its end.
	if got, want := symClasses(p), "- begin>begin;- end>end;- pre>pre;B cool>cool;F warm>warm;"; got != want {
		t.Fatalf("classes %q, want %q", got, want)
	}
	for _, c := range p.Classes {
		if c.Mode != 70 || c.Min != 70 || c.Max != 70 || c.ModeN != c.N || c.SameDur != c.N {
			t.Errorf("%s: %+v, want every shift 70", c.Class, c)
		}
	}
	// 2×4 forward and 2×4 backward tasks in the entries' classes.
	if n := p.Classes[3].N + p.Classes[4].N; n != 16 {
		t.Errorf("%d entry tasks, want 16", n)
	}
}

func TestCompareStagesBreaks(t *testing.T) {
	order := []string{"F0", "F1", "B0", "B1"}
	a := symStage(0, 0, order, nil)
	// Task 7 (F1's first forward: the gather, F0's five, F1's receive
	// before it) lasts 13 ns instead of 10: every later task moves 3 ns more.
	b := symStage(2, 70, order, map[int]int64{7: 13})
	p := CompareStages(a, b)
	if p.Exact() {
		t.Fatal("a slowed task reported exact")
	}
	for _, c := range p.Classes {
		switch c.Class {
		case "- pre>pre", "- begin>begin":
			if !c.Exact() || c.Mode != 70 {
				t.Errorf("%s: %+v", c.Class, c)
			}
		case "F warm>warm":
			// F0's 4 and F1's receive at 70, F1's first forward starts at 70
			// but ends at 73, the next two tasks at 73.
			if c.N != 8 || c.Distinct != 2 || c.Mode != 70 || c.ModeN != 6 || c.Max != 73 || c.SameDur != 7 {
				t.Errorf("%s: %+v", c.Class, c)
			}
			if want := "fwd/compute L2 m1: start +0 end +3"; c.First != want {
				t.Errorf("first break %q, want %q", c.First, want)
			}
		case "B cool>cool", "- end>end":
			if !c.Exact() || c.Mode != 73 {
				t.Errorf("%s: %+v", c.Class, c)
			}
		}
	}
}

func TestCompareStagesPhases(t *testing.T) {
	// 1F1B on two stages with two micro-batches: stage 0 warms up with one
	// forward, stage 1 with none.
	a := symStage(0, 0, []string{"F0", "F1", "B0", "B1"}, nil)
	b := symStage(2, 40, []string{"F0", "B0", "F1", "B1"}, nil)
	p := CompareStages(a, b)
	want := "- begin>begin;- end>end;- pre>pre;B cool>cool;B cool>steady;F warm>steady;F warm>warm;"
	if got := symClasses(p); got != want {
		t.Fatalf("classes %q, want %q", got, want)
	}
	// A task of one stage with no counterpart in the other (the first
	// stage's embedding) is counted, not compared.
	a = append(a[:1:1], append([]SymTask{{Kind: "forward", Stream: "compute", Name: "embedding_fwd", Layer: -1, Micro: 0, Chunk: -1}}, a[1:]...)...)
	p = CompareStages(a, b)
	if p.OnlyA != 1 || p.OnlyB != 0 || p.Exact() {
		t.Fatalf("only a %d, only b %d, exact %t; want 1, 0, false", p.OnlyA, p.OnlyB, p.Exact())
	}
}

func TestCompareStagesPre(t *testing.T) {
	// The gather before the first receive runs at the same time on both
	// stages (it waits for no other stage): its own class, shift 0.
	order := []string{"F0", "B0"}
	a, b := symStage(0, 0, order, nil), symStage(2, 70, order, nil)
	b[0].Start, b[0].End = a[0].Start, a[0].End
	p := CompareStages(a, b)
	if !p.Exact() {
		t.Fatalf("not exact: %+v", p)
	}
	for _, c := range p.Classes {
		if want := map[bool]int64{true: 0, false: 70}[c.Class == "- pre>pre"]; c.Mode != want {
			t.Errorf("%s: shift %d, want %d", c.Class, c.Mode, want)
		}
	}
	// Started after the stage's first receive has ended (a's at 20, b's at
	// 90) it is the step's begin, with the other begin task.
	a[0].Start, a[0].End = 25, 35
	b[0].Start, b[0].End = 95, 105
	p = CompareStages(a, b)
	if got := symClasses(p); got != "- begin>begin;- end>end;B cool>cool;F warm>warm;" || !p.Exact() || p.Classes[0].N != 2 || p.Classes[0].Mode != 70 {
		t.Errorf("classes %q, exact %t, begin %+v", got, p.Exact(), p.Classes[0])
	}
}

func TestStagePairSameShifts(t *testing.T) {
	order := []string{"F0", "B0"}
	a, b, c := symStage(0, 0, order, nil), symStage(2, 50, order, nil), symStage(4, 100, order, nil)
	d := symStage(6, 160, order, nil)
	ab, bc, cd := CompareStages(a, b), CompareStages(b, c), CompareStages(c, d)
	if !ab.SameShifts(bc) {
		t.Error("two pairs shifted by 50 each: not the same shifts")
	}
	if bc.SameShifts(cd) {
		t.Error("shifts 50 and 60 reported the same")
	}
}

func TestRepeats(t *testing.T) {
	order := []string{"F0", "F1", "B0", "B1"}
	a := symStage(0, 0, order, nil)
	b := symStage(2, 70, order, map[int]int64{7: 13}) // shifts 70, then 73 from task 7's end on
	// c moves every task from b as b moved it from a: 70 or 73 again.
	c := make([]SymTask, len(b))
	for i := range b {
		c[i] = b[i]
		c[i].Layer = b[i].Layer + 2*min(b[i].Layer+1, 1) // layers 4 and 5; -1 stays
		c[i].Start, c[i].End = 2*b[i].Start-a[i].Start, 2*b[i].End-a[i].End
	}
	if CompareStages(a, b).Exact() || CompareStages(b, c).Exact() {
		t.Fatal("pairs with two shifts reported exact")
	}
	if n, same := Repeats(a, b, c); n != len(b) || same != n {
		t.Fatalf("Repeats %d of %d, want all %d", same, n, len(b))
	}
	c[10].End++ // one task of c ends 1 ns later
	if n, same := Repeats(a, b, c); n != len(b) || same != n-1 {
		t.Fatalf("Repeats %d of %d, want %d", same, n, n-1)
	}
	// A task of b with no counterpart in c is not counted.
	if n, _ := Repeats(a, b, c[:len(c)-1]); n != len(b)-1 {
		t.Fatalf("n %d, want %d", n, len(b)-1)
	}
}
