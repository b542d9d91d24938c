package parallel

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Stage symmetry (issue 18, plan item 1 of docs/design.md "Speed"): does
// pipeline stage s+1 play stage s's tasks shifted by a constant? This file
// measures it on finished plays; nothing in a simulation reads it.
//
// Two stages' tasks correspond when they are the same work of the same
// micro-batch: equal kind, stream, name, process group, chunk and
// micro-batch, the same layer counted from the stage's (and chunk's) first
// layer, and the same occurrence of that combination in issue order. For
// every corresponding pair the start shift is start(s+1) − start(s); the
// pair repeats exactly when the end shift equals it too. The pairs are
// classed by the pass their task belongs to (forward, backward, or the
// step's own work outside any micro-batch) and by the schedule phase of
// the micro-batch's entry on each of the two stages: a forward is in the
// warm-up when its entry comes before the stage's first backward entry, a
// backward is in the cool-down when it comes after the stage's last
// forward entry, and every other entry is in the steady 1F1B part. The
// step's own work is "pre" when it starts before the stage's first
// received activation or gradient has arrived (it waits for no other
// stage: the first ZeRO-3 and FSDP parameter gathers), else at its begin
// when issued before the stage's first backward entry (the later gathers
// interleaved with the forwards), else at its end.

// SymTask is one played task of one stage, as CompareStages reads it (the
// fields of simulation.TaskRecord, with Kind and Stream as their names).
type SymTask struct {
	Kind, Stream, Name, Group string
	Layer, Micro, Chunk       int // -1 when none
	Start, End                int64
}

// Phase names of SymShift.Class.
const (
	symWarm   = "warm"
	symSteady = "steady"
	symCool   = "cool"
	symPre    = "pre"
	symBegin  = "begin"
	symEnd    = "end"
)

// SymShift is what CompareStages found for one class of corresponding tasks.
type SymShift struct {
	// Class is the pass ("F", "B" or "-" for the step's work outside a
	// micro-batch) and the phase on stage s and on stage s+1, as
	// "F warm>steady" (phases warm, steady, cool; pre, begin and end for "-").
	Class string
	// N is the corresponding pairs, Distinct the distinct start shifts
	// among them, Min and Max the smallest and largest, Mode the most
	// frequent (the smallest of equally frequent ones) and ModeN its count.
	N, Distinct    int
	Min, Max, Mode int64
	ModeN          int
	// SameDur is the pairs whose end shift equals their start shift.
	SameDur int
	// First is, for an inexact class, the first task of stage s+1 (in
	// issue order) whose shifts are not Mode: its name, micro-batch and
	// shift, for the report.
	First string
}

// Exact says every pair of the class is the same task shifted by one
// constant (start and end).
func (s SymShift) Exact() bool { return s.Distinct == 1 && s.SameDur == s.N }

// StagePair is CompareStages' answer for stages s and s+1.
type StagePair struct {
	Classes []SymShift // sorted by Class
	// OnlyA and OnlyB count the tasks of stage s and of stage s+1 with no
	// counterpart in the other (the first stage's embedding, the last
	// stage's head and loss).
	OnlyA, OnlyB int
}

// Exact says every class is exact and every task has a counterpart.
func (p StagePair) Exact() bool {
	if p.OnlyA != 0 || p.OnlyB != 0 {
		return false
	}
	for _, c := range p.Classes {
		if !c.Exact() {
			return false
		}
	}
	return true
}

// SameShifts says p and q (two consecutive pairs) have the same classes,
// each exact with the same shift: stage s+2 is then stage s+1 moved exactly
// as stage s+1 is stage s moved.
func (p StagePair) SameShifts(q StagePair) bool {
	if !p.Exact() || !q.Exact() || len(p.Classes) != len(q.Classes) {
		return false
	}
	for i := range p.Classes {
		if p.Classes[i].Class != q.Classes[i].Class || p.Classes[i].Mode != q.Classes[i].Mode {
			return false
		}
	}
	return true
}

// symPasses returns, per task, its pass ('F', 'B', or '-' outside any
// micro-batch) and its entry's phase. A compute task's pass is its kind's
// (forward: F; backward, weight gradient, recompute: B); a received
// activation is F and a received gradient B; any other task of a
// micro-batch takes the pass of the nearest compute task of its
// micro-batch and chunk before it in issue order, or after it when none
// is before.
func symPasses(ts []SymTask) (pass []byte, phase []string) {
	pass = make([]byte, len(ts))
	phase = make([]string, len(ts))
	type mc struct{ m, c int }
	last := map[mc]byte{}
	for i, t := range ts {
		switch {
		case t.Micro < 0:
			pass[i] = '-'
		case t.Kind == "forward":
			pass[i] = 'F'
		case t.Kind == "backward" || t.Kind == "wgrad" || t.Kind == "recompute":
			pass[i] = 'B'
		case t.Stream == "pp_recv_act":
			pass[i] = 'F'
		case t.Stream == "pp_recv_grad":
			pass[i] = 'B'
		default:
			pass[i] = last[mc{t.Micro, t.Chunk}] // 0 when no compute before
		}
		if pass[i] == 'F' || pass[i] == 'B' {
			if k := t.Kind; k == "forward" || k == "backward" || k == "wgrad" || k == "recompute" {
				last[mc{t.Micro, t.Chunk}] = pass[i]
			}
		}
	}
	next := map[mc]byte{}
	for i := len(ts) - 1; i >= 0; i-- {
		t := ts[i]
		if k := t.Kind; t.Micro >= 0 && (k == "forward" || k == "backward" || k == "wgrad" || k == "recompute") {
			next[mc{t.Micro, t.Chunk}] = pass[i]
		}
		if pass[i] == 0 {
			if p := next[mc{t.Micro, t.Chunk}]; p != 0 {
				pass[i] = p
			} else {
				pass[i] = '-'
			}
		}
	}
	// An entry's place: the issue index of its first compute task.
	firstB, lastF := len(ts), -1
	type entry struct {
		m, c int
		p    byte
	}
	at := map[entry]int{}
	for i, t := range ts {
		k := t.Kind
		if t.Micro < 0 || !(k == "forward" || k == "backward" || k == "wgrad" || k == "recompute") {
			continue
		}
		e := entry{t.Micro, t.Chunk, pass[i]}
		if _, ok := at[e]; !ok {
			at[e] = i
			if e.p == 'B' && i < firstB {
				firstB = i
			}
			if e.p == 'F' && i > lastF {
				lastF = i
			}
		}
	}
	// The first received activation or gradient's end: the step's own
	// work that starts before it does not wait for the other stages.
	recv := int64(math.MaxInt64)
	for _, t := range ts {
		if t.Stream == "pp_recv_act" || t.Stream == "pp_recv_grad" {
			recv = min(recv, t.End)
		}
	}
	for i, t := range ts {
		if pass[i] == '-' {
			switch {
			case t.Start < recv:
				phase[i] = symPre
			case i < firstB:
				phase[i] = symBegin
			default:
				phase[i] = symEnd
			}
			continue
		}
		first, ok := at[entry{t.Micro, t.Chunk, pass[i]}]
		switch {
		case !ok:
			phase[i] = symSteady
		case pass[i] == 'F' && first < firstB:
			phase[i] = symWarm
		case pass[i] == 'B' && first > lastF:
			phase[i] = symCool
		default:
			phase[i] = symSteady
		}
	}
	return pass, phase
}

// symKeys returns each task's correspondence key (the comment at the top).
func symKeys(ts []SymTask) []string {
	type sc struct{ chunk int }
	base := map[sc]int{}
	for _, t := range ts {
		if t.Layer < 0 {
			continue
		}
		if b, ok := base[sc{t.Chunk}]; !ok || t.Layer < b {
			base[sc{t.Chunk}] = t.Layer
		}
	}
	keys := make([]string, len(ts))
	seen := map[string]int{}
	for i, t := range ts {
		layer := -1
		if t.Layer >= 0 {
			layer = t.Layer - base[sc{t.Chunk}]
		}
		k := t.Kind + "|" + t.Stream + "|" + t.Name + "|" + t.Group + "|" + strconv.Itoa(layer) + "|" +
			strconv.Itoa(t.Micro) + "|" + strconv.Itoa(t.Chunk)
		n := seen[k]
		seen[k] = n + 1
		keys[i] = k + "#" + strconv.Itoa(n)
	}
	return keys
}

// CompareStages compares the plays of two stages, a (stage s) and b
// (stage s+1), each in issue order.
func CompareStages(a, b []SymTask) StagePair {
	ka, kb := symKeys(a), symKeys(b)
	_, fa := symPasses(a)
	pb, fb := symPasses(b)
	idx := make(map[string]int, len(a))
	for i, k := range ka {
		idx[k] = i
	}
	type acc struct {
		shifts []int64
		same   int
		first  int // index in b of the first pair, in issue order
		firstI []int
	}
	classes := map[string]*acc{}
	var out StagePair
	matched := 0
	for j, k := range kb {
		i, ok := idx[k]
		if !ok {
			out.OnlyB++
			continue
		}
		matched++
		c := string(pb[j]) + " " + fa[i] + ">" + fb[j]
		ac := classes[c]
		if ac == nil {
			ac = &acc{}
			classes[c] = ac
		}
		d := b[j].Start - a[i].Start
		ac.shifts = append(ac.shifts, d)
		ac.firstI = append(ac.firstI, j)
		if b[j].End-a[i].End == d {
			ac.same++
		}
	}
	out.OnlyA = len(a) - matched
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	slices.Sort(names)
	for _, c := range names {
		ac := classes[c]
		s := SymShift{Class: c, N: len(ac.shifts), SameDur: ac.same}
		sorted := slices.Clone(ac.shifts)
		slices.Sort(sorted)
		s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
		for i := 0; i < len(sorted); {
			j := i
			for j < len(sorted) && sorted[j] == sorted[i] {
				j++
			}
			s.Distinct++
			if j-i > s.ModeN {
				s.Mode, s.ModeN = sorted[i], j-i
			}
			i = j
		}
		if !s.Exact() {
			for n, d := range ac.shifts {
				j := ac.firstI[n]
				i := idx[kb[j]]
				if d != s.Mode || b[j].End-a[i].End != d {
					t := b[j]
					s.First = fmt.Sprintf("%s/%s L%d m%d: start %+d end %+d", t.Name, t.Stream, t.Layer, t.Micro,
						d-s.Mode, b[j].End-a[i].End-s.Mode)
					break
				}
			}
		}
		out.Classes = append(out.Classes, s)
	}
	return out
}

// Repeats compares three consecutive stages a, b, c (s, s+1, s+2): it
// returns the tasks of b with a counterpart in both a and c, and how many
// of them move from b to c exactly as they moved from a to b (start and
// end): where all do, stage s+2 is stage s+1 moved task by task as stage
// s+1 is stage s, whatever the shifts are.
func Repeats(a, b, c []SymTask) (n, same int) {
	ka, kb, kc := symKeys(a), symKeys(b), symKeys(c)
	ia := make(map[string]int, len(a))
	for i, k := range ka {
		ia[k] = i
	}
	ic := make(map[string]int, len(c))
	for i, k := range kc {
		ic[k] = i
	}
	for j, k := range kb {
		i, ok := ia[k]
		l, ok2 := ic[k]
		if !ok || !ok2 {
			continue
		}
		n++
		if b[j].Start-a[i].Start == c[l].Start-b[j].Start && b[j].End-a[i].End == c[l].End-b[j].End {
			same++
		}
	}
	return n, same
}
