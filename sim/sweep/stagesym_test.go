package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// stageTasks plays sc whole (every task kept) and returns each pipeline
// stage's representative tasks, in issue order.
func stageTasks(t *testing.T, sc *scenario.Plan, runID string) (*simulation.Result, [][]parallel.SymTask) {
	t.Helper()
	r, err := simulation.Run(context.Background(), sc, simulation.Options{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	pp := r.Layout.PP
	out := make([][]parallel.SymTask, pp)
	for s := 0; s < pp; s++ {
		rank := r.Layout.RankOf(parallel.Coord{PP: s})
		r.Tasks([]int{rank}, func(k simulation.TaskRecord) {
			if k.Stream == "host" {
				return // the host track's spans, not tasks
			}
			out[s] = append(out[s], parallel.SymTask{Kind: k.Kind, Stream: k.Stream, Name: k.Name, Group: k.Group,
				Layer: k.Layer, Micro: k.Microbatch, Chunk: k.Chunk, Start: k.StartNs, End: k.EndNs})
		})
	}
	return r, out
}

// symReport compares every pair of consecutive stages of one play and
// writes its rows and a line per point to sum (exact pairs, repeating
// triples, the boundaries' period and send times); it returns the middle pairs (neither stage first nor
// last) that are exact, those that also move as the pair before them did,
// the middle pairs, and the tasks of the stages an exact rule could skip
// (stage s+1 of a middle pair that repeats the pair before it exactly).
func symReport(b, sum *strings.Builder, label string, pp, m int, st [][]parallel.SymTask) (exact, same, middle, skippable, tasks, perExact, perMiddle, repExact, repMiddle int) {
	pairs := make([]parallel.StagePair, pp-1)
	flags := make([]byte, pp-1)
	sends := make([]string, pp-1)
	for s := 0; s+1 < pp; s++ {
		pairs[s] = parallel.CompareStages(st[s], st[s+1])
		flags[s] = '.'
		if pairs[s].Exact() {
			flags[s] = 'x'
		}
		for _, k := range st[s] { // the first activation send's duration: the link s -> s+1
			if k.Name == "send_act" {
				sends[s] = fmt.Sprint(k.End - k.Start)
				break
			}
		}
	}
	// The boundaries' period P (the smallest with sends[i] = sends[i+P]
	// for every boundary): a stage may repeat the one P before it at best.
	period := len(sends)
	for q := 1; q < len(sends); q++ {
		ok := true
		for i := 0; i+q < len(sends); i++ {
			ok = ok && sends[i] == sends[i+q]
		}
		if ok {
			period = q
			break
		}
	}
	// Triples of middle stages (s, s+1, s+2 all neither first nor last)
	// where every task moves from s+1 to s+2 as it moved from s to s+1.
	var rep []byte
	for s := 1; s+2 <= pp-2; s++ {
		n, same := parallel.Repeats(st[s], st[s+1], st[s+2])
		c := byte('.')
		if n > 0 && same == n {
			c = 'x'
			repExact++
		}
		rep = append(rep, c)
		repMiddle++
	}
	var per []byte
	for s := 1; s+period <= pp-2; s++ {
		c := byte('.')
		if parallel.CompareStages(st[s], st[s+period]).Exact() {
			c = 'x'
			perExact++
		}
		per = append(per, c)
		perMiddle++
	}
	fmt.Fprintf(sum, "%s\t%d\t%d\t%s\t%s\t%d\t%s\t%s\n", label, pp, m, flags, rep, period, per, strings.Join(sends, ","))
	for s := 0; s < pp; s++ {
		tasks += len(st[s])
	}
	for s, p := range pairs {
		mid := s >= 1 && s+1 <= pp-2
		if mid {
			middle++
			if p.Exact() {
				exact++
			}
			if s >= 2 && pairs[s-1].SameShifts(p) {
				same++
				skippable += len(st[s+1])
			}
		}
		for _, c := range p.Classes {
			fmt.Fprintf(b, "%s\t%d\t%d\t%d>%d\t%t\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", label, pp, m, s, s+1, mid, c.Class,
				c.N, c.Distinct, c.Min, c.Max, c.Mode, c.ModeN, c.SameDur, p.OnlyA, p.OnlyB, c.First)
		}
	}
	return
}

const symHeader = "point\tpp\tm\tpair\tmiddle\tclass\tn\tdistinct\tmin_ns\tmax_ns\tmode_ns\tmode_n\tsame_dur\tonly_a\tonly_b\tfirst_break\n"

// TestStageSymmetryReport measures, for every simulated point of the 70B
// sweep with pp >= 8, every bundled scenario with pp >= 4 and a control
// (Llama 3 8B at pp 8 and 32 on one node of 8 or 32 GPUs: every stage
// boundary the same NVLink path, m = 1 to 64), whether
// pipeline stage s+1 plays stage s's tasks shifted by a constant
// (parallel.CompareStages), and writes a table (one row per stage pair and
// class) to the file SIMTRAIN_STAGESYM_REPORT names (skipped without it): a
// diagnostic for issue 18, not a check.
func TestStageSymmetryReport(t *testing.T) {
	out := os.Getenv("SIMTRAIN_STAGESYM_REPORT")
	if out == "" {
		t.Skip("SIMTRAIN_STAGESYM_REPORT names the report file")
	}
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b, sum strings.Builder
	b.WriteString(symHeader)
	sum.WriteString("point\tpp\tm\texact_pairs\trepeating_triples\tperiod\texact_at_period\tsend_act_ns\n")
	reuse := new(simulation.Reuse)
	type tot struct{ points, pointsExact, exact, same, middle, skip, tasks, perExact, perMiddle, repExact, repMiddle int }
	sums := map[string]*tot{}
	add := func(k string, exact, same, middle, skip, tasks, perExact, perMiddle, repExact, repMiddle int) {
		s := sums[k]
		if s == nil {
			s = &tot{}
			sums[k] = s
		}
		s.points++
		if exact == middle {
			s.pointsExact++
		}
		s.exact += exact
		s.same += same
		s.middle += middle
		s.skip += skip
		s.tasks += tasks
		s.perExact += perExact
		s.perMiddle += perMiddle
		s.repExact += repExact
		s.repMiddle += repMiddle
	}
	for i := 0; i < sw.Len(); i++ {
		got, _ := sw.evaluate(context.Background(), i, reuse)
		if got.Outcome != Simulated || got.Result.Layout.PP < 8 {
			continue
		}
		r := got.Result
		kind := "whole"
		if r.Replicated > 0 {
			kind = "replicated"
		}
		sc := got.Point.Scenario
		m := sc.StepConfig(r.Layout).Microbatches
		_, st := stageTasks(t, sc, got.Point.RunID)
		label := fmt.Sprintf("%d:%s:%s", i, strings.Join(got.Point.Values, ","), kind)
		e, s, mid, skip, n, pe, pm, re, rm := symReport(&b, &sum, label, r.Layout.PP, m, st)
		add(fmt.Sprintf("sweep pp%d %s", r.Layout.PP, kind), e, s, mid, skip, n, pe, pm, re, rm)
	}
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	for _, f := range files {
		sc, err := scenario.Load(f)
		if err != nil {
			continue // a partial or course file the runner would refuse too
		}
		r, st := stageTasks(t, sc, "")
		if r.Layout.PP < 4 {
			continue
		}
		m := sc.StepConfig(r.Layout).Microbatches
		e, s, mid, skip, n, pe, pm, re, rm := symReport(&b, &sum, filepath.Base(f), r.Layout.PP, m, st)
		add("bundled", e, s, mid, skip, n, pe, pm, re, rm)
		t.Logf("%s: pp %d, m %d: %d/%d middle pairs exact, %d move as the pair before", filepath.Base(f), r.Layout.PP, m, e, mid, s)
	}
	// Controls: Llama 3 8B on one 8-GPU node, pp 8 (tp 1, dp 1): every
	// stage boundary is the same NVLink path, so the p2p costs are equal.
	for _, c := range []struct{ pp, m string }{{"8", "1"}, {"8", "4"}, {"8", "8"}, {"8", "16"}, {"8", "32"}, {"32", "4"}, {"32", "16"}, {"32", "64"}} {
		pp, m := c.pp, c.m
		sc, err := scenario.Parse([]byte("name: sym8b\nmodel: {preset: llama3-8b}\ntraining: {seq_len: 4096, micro_batch: 1}\ncluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: "+pp+"}\n"),
			scenario.Overrides("parallel.pp", pp, "parallel.tp", "1", "parallel.schedule", "1f1b", "training.global_batch", m)...)
		if err != nil {
			t.Fatal(err)
		}
		r, st := stageTasks(t, sc, "")
		mm := sc.StepConfig(r.Layout).Microbatches
		label := fmt.Sprintf("control-8b-pp%s-m%d", pp, mm)
		e, s, mid, skip, n, pe, pm, re, rm := symReport(&b, &sum, label, r.Layout.PP, mm, st)
		add("control", e, s, mid, skip, n, pe, pm, re, rm)
		t.Logf("%s: %d/%d middle pairs exact, %d move as the pair before", label, e, mid, s)
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out+".pairs", []byte(sum.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range sortedKeys(sums) {
		s := sums[k]
		t.Logf("%s: %d points (%d with every middle pair exact); middle pairs %d, exact %d, moving as the pair before %d; tasks %d, of stages a rule could skip %d; middle stages P apart (the boundaries' period) %d, exact %d; middle triples %d, repeating %d",
			k, s.points, s.pointsExact, s.middle, s.exact, s.same, s.tasks, s.skip, s.perMiddle, s.perExact, s.repMiddle, s.repExact)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}
