package parallel

import (
	"math/rand"
	"slices"
	"testing"
)

// plainArrivals is Resume's delivery of a common prefix's inputs to the
// tasks past it as first written: each prefix task's successor list
// through Program.Succ.
func plainArrivals(p *Program, state []taskState, need []int32, hot []hotTask) bool {
	c := int32(len(state))
	early := false
	for d := int32(0); d < c && !early; d++ {
		succ := p.Succ(int(d))
		if len(succ) == 0 || succ[len(succ)-1] < c || state[d].end == 0 {
			continue
		}
		for k := len(succ) - 1; k >= 0 && succ[k] >= c; k-- {
			t := succ[k]
			need[t]--
			if n := need[t]; hot[t].kind != KindRecv && (n <= 0 || p.Hosted && n <= 1) {
				early = true
			}
		}
	}
	return early
}

// prefixArrivals leaves the same inputs awaited and reports the same as
// the plain walk: hand-made cases (a task not ended right before an ended
// one whose successors all lie past the prefix, empty lists, an empty
// prefix of a program without successor offsets) and random programs of
// every prefix length, with and without a host thread, and long ones
// (200–2,000 tasks) whose lists rarely reach far ahead. Fails when a
// skipped task's list end is not carried to the next (the walk then reads
// the skipped task's successors as the next one's).
func TestPrefixArrivalsMatchPlain(t *testing.T) {
	type prog struct {
		lists  [][]int32 // each task's successors, ascending
		ended  []bool    // the prefix tasks' (len: the prefix)
		need   []int32
		recv   []bool
		hosted bool
	}
	hand := []prog{
		// task 0 not ended, its successors 2 and 3 past the prefix; task
		// 1 ended, its successor 3: only task 1's arrival counts
		{lists: [][]int32{{2, 3}, {3}, {}, {}}, ended: []bool{false, true}, need: []int32{0, 1, 1, 2}, recv: make([]bool, 4)},
		// the same with task 1's input making task 3 ready
		{lists: [][]int32{{2, 3}, {3}, {}, {}}, ended: []bool{false, true}, need: []int32{0, 1, 1, 1}, recv: make([]bool, 4)},
		// a receive made ready is not early; a hosted task needs ≤ 1
		{lists: [][]int32{{1, 2}, {}, {}}, ended: []bool{true}, need: []int32{0, 1, 2}, recv: []bool{false, true, false}, hosted: true},
		// empty lists and successors inside the prefix only
		{lists: [][]int32{{}, {2}, {}, {}}, ended: []bool{true, true, true}, need: []int32{0, 0, 1, 0}, recv: make([]bool, 4)},
		// an empty prefix
		{lists: [][]int32{{1}, {}}, ended: []bool{}, need: []int32{0, 1}, recv: make([]bool, 2)},
	}
	rng := rand.New(rand.NewSource(46))
	var cases []prog
	cases = append(cases, hand...)
	for range 400 {
		n := 2 + rng.Intn(40)
		pr := prog{lists: make([][]int32, n), need: make([]int32, n), recv: make([]bool, n), hosted: rng.Intn(2) == 0}
		for d := range n {
			for s := d + 1; s < n; s++ {
				if rng.Intn(4) == 0 {
					pr.lists[d] = append(pr.lists[d], int32(s))
					pr.need[s]++
				}
			}
			pr.recv[d] = rng.Intn(5) == 0
		}
		for s := range n {
			pr.need[s] += int32(rng.Intn(3)) - 1
		}
		c := rng.Intn(n + 1)
		pr.ended = make([]bool, c)
		for d := range c {
			pr.ended[d] = rng.Intn(3) != 0
		}
		cases = append(cases, pr)
	}
	// long prefixes whose lists reach mostly the next few tasks and
	// rarely far ahead: entries past the prefix far apart, their tasks
	// found by prefixArrivals' search over long stretches of lists
	for range 40 {
		n := 200 + rng.Intn(1800)
		pr := prog{lists: make([][]int32, n), need: make([]int32, n), recv: make([]bool, n), hosted: rng.Intn(2) == 0}
		for d := range n {
			for s := d + 1; s < min(n, d+4); s++ {
				if rng.Intn(2) == 0 {
					pr.lists[d] = append(pr.lists[d], int32(s))
					pr.need[s]++
				}
			}
			if rng.Intn(300) == 0 && d+4 < n {
				s := int32(d + 4 + rng.Intn(n-d-4))
				pr.lists[d] = append(pr.lists[d], s) // (after the near ones: in task order)
				pr.need[s]++
			}
			pr.recv[d] = rng.Intn(5) == 0
		}
		for s := range n {
			pr.need[s] += int32(rng.Intn(3)) - 1
		}
		c := n/2 + rng.Intn(n/2)
		pr.ended = make([]bool, c)
		for d := range c {
			pr.ended[d] = rng.Intn(10) != 0
		}
		cases = append(cases, pr)
	}
	skips := 0
	for ci, pc := range cases {
		n := len(pc.lists)
		p := &Program{Hosted: pc.hosted, succOf: make([]int32, n+1)}
		for d, l := range pc.lists {
			p.succ = append(p.succ, l...)
			p.succOf[d+1] = int32(len(p.succ))
		}
		hot := make([]hotTask, n)
		for d := range hot {
			if pc.recv[d] {
				hot[d].kind = KindRecv
			}
		}
		state := make([]taskState, len(pc.ended))
		for d, e := range pc.ended {
			if e {
				state[d].end = 1
			} else if d+1 < len(pc.ended) && pc.ended[d+1] && len(pc.lists[d]) > 0 {
				skips++
			}
		}
		if len(pc.ended) == 0 && ci < len(hand) {
			p.succOf, p.succ = nil, nil // (no successor offsets: an empty prefix reads none)
		}
		wantNeed, gotNeed := slices.Clone(pc.need), slices.Clone(pc.need)
		var want bool
		if p.succOf != nil {
			want = plainArrivals(p, state, wantNeed, hot)
		}
		got := prefixArrivals(p, state, gotNeed, hot)
		if got != want || !slices.Equal(gotNeed, wantNeed) {
			t.Errorf("case %d (%d tasks, prefix %d, hosted %v): early %v, inputs %v; the plain walk: %v, %v",
				ci, n, len(pc.ended), pc.hosted, got, gotNeed, want, wantNeed)
		}
	}
	if skips < 50 {
		t.Fatalf("only %d cases of a skipped task with successors before an ended one", skips)
	}
}
