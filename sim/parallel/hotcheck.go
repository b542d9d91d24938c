package parallel

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/simtrain/simtrain/sim/engine"
)

// CheckHot compares what fillHot makes of p's tasks (the copied ranges'
// records copied from their sources, Program.copies), and the records an
// arena's build kept (Program.hot), with every record
// converted from its Task and the input counts taken from the dependency
// counts, as fillHot did before copied ranges were copied: for tests, which
// hold the copying to the conversion on built programs; and the successor
// lists and dependency counts with a recount (CheckSucc), and that a
// program whose build made no host wait (Program.noHostWaits) holds
// none, and that a build's host-issue sum (Program.issueSum) is the
// tasks', and that a build's program lists every send and receive, in
// task order, in p2p (Program.p2pListed). It reports how
// many tasks lie in copied ranges and the first difference.
func CheckHot(p *Program) (copied int, err error) {
	n := len(p.Tasks)
	got, want := make([]hotTask, n), make([]hotTask, n)
	gotNeed, wantNeed := make([]int32, n), make([]int32, n)
	fillHot(got, gotNeed, p)
	fillHotTasks(want, p.Tasks)
	for i := range want {
		w := p.waits(i) // (the issue times and waits are the records' alone)
		want[i].issue, want[i].hostAfter, want[i].queueAfter = w.issue, w.hostAfter, w.queueAfter
		wantNeed[i] = int32(len(p.Deps(i)))
		if p.Hosted && p.Tasks[i].Kind != KindRecv {
			wantNeed[i]++
		}
	}
	for _, c := range p.copies {
		copied += int(c.n)
	}
	if len(p.depOff) > 0 { // dependency lists made (not a hand-made program's records alone)
		if err := CheckSucc(p); err != nil {
			return copied, err
		}
	}
	if p.p2pListed {
		// symBuffers clears the receives it finds in p2p alone (reuse.go)
		var p2p []int32
		for i := range p.Tasks {
			if k := p.Tasks[i].Kind; k == KindSend || k == KindRecv {
				p2p = append(p2p, int32(i))
			}
		}
		if !slices.Equal(p2p, p.p2p) {
			return copied, fmt.Errorf("stage %d: p2p lists %d tasks, the program has %d sends and receives", p.Stage, len(p.p2p), len(p2p))
		}
	}
	if p.issueSumOK {
		var sum engine.Time
		for i := range p.Tasks {
			if p.Hosted && p.Tasks[i].Kind != KindRecv {
				sum += p.Issue(i)
			}
		}
		if sum != p.issueSum {
			return copied, fmt.Errorf("stage %d: issueSum %v, the tasks' issue sum %v", p.Stage, p.issueSum, sum)
		}
	}
	for i := range want {
		if p.noHostWaits && want[i].hostAfter != 0 {
			return copied, fmt.Errorf("stage %d task %d (%s): a host wait (on task %d) in a program built without one (noHostWaits)",
				p.Stage, i, p.Tasks[i].Name, want[i].hostAfter-1)
		}
		if p.noHostWaits && want[i].kind == KindRecv && want[i].queueAfter != 0 {
			// (hostRun's loop for such programs tests the kind only of
			// tasks without a launch-queue wait)
			return copied, fmt.Errorf("stage %d task %d (%s): a launch-queue wait (on task %d) on a receive, which the host does not issue",
				p.Stage, i, p.Tasks[i].Name, want[i].queueAfter-1)
		}
		if p.keepHot && len(p.hot) == n && p.hot[i] != want[i] {
			return copied, fmt.Errorf("stage %d task %d (%s): kept by the build %+v, from the Task %+v",
				p.Stage, i, p.Tasks[i].Name, p.hot[i], want[i])
		}
		if got[i] != want[i] || gotNeed[i] != wantNeed[i] {
			return copied, fmt.Errorf("stage %d task %d (%s): fillHot %+v need %d, from the Task %+v need %d",
				p.Stage, i, p.Tasks[i].Name, got[i], gotNeed[i], want[i], wantNeed[i])
		}
	}
	return copied, nil
}

// hotChecks, when set, makes NewSymmetric check each program's records
// (CheckHot) and count what it checked (SetHotChecks).
var hotChecks struct {
	on                 atomic.Bool
	tasks, copied, bad atomic.Int64
	first              atomic.Value // the first difference's error
}

// SetHotChecks turns NewSymmetric's checks of its records (CheckHot) on or
// off, for tests that play whole sweeps, and returns the tasks checked so
// far, how many of them lay in copied ranges and the first difference met
// (nil: none).
func SetHotChecks(on bool) (tasks, copied int64, err error) {
	hotChecks.on.Store(on)
	if e, ok := hotChecks.first.Load().(error); ok {
		err = e
	}
	return hotChecks.tasks.Load(), hotChecks.copied.Load(), err
}

// checkHot is NewSymmetric's check of p's records when SetHotChecks is on.
func checkHot(p *Program) {
	c, err := CheckHot(p)
	hotChecks.tasks.Add(int64(len(p.Tasks)))
	hotChecks.copied.Add(int64(c))
	if err != nil && hotChecks.bad.Add(1) == 1 {
		hotChecks.first.Store(err)
	}
}

// CheckSucc compares p's successor lists (Succ: finish's counting sort)
// with lists made again from the dependency lists alone, task by task:
// for tests, which hold any faster derivation of the lists to a recount
// on built programs.
func CheckSucc(p *Program) error {
	n := len(p.Tasks)
	if len(p.depOff) != n+1 || len(p.succOf) != n+1 {
		return fmt.Errorf("stage %d: %d tasks, %d dependency offsets, %d successor offsets",
			p.Stage, n, len(p.depOff), len(p.succOf))
	}
	want := make([][]int32, n)
	for t := range n {
		d := p.Deps(t)
		for _, j := range d {
			want[j] = append(want[j], int32(t))
		}
	}
	if p.succOf[0] != 0 || int(p.succOf[n]) != len(p.succ) {
		return fmt.Errorf("stage %d: successor offsets from %d to %d, %d successors", p.Stage, p.succOf[0], p.succOf[n], len(p.succ))
	}
	for j := range n {
		if got := p.Succ(j); !slices.Equal(got, want[j]) {
			return fmt.Errorf("stage %d task %d (%s): successors %v, recounted %v", p.Stage, j, p.Tasks[j].Name, got, want[j])
		}
	}
	return nil
}
