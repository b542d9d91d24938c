package parallel

import (
	"reflect"
	"testing"
)

// TestCopyPassByHand copies a hand-made 3-task pass. Tasks 0–2 are pass B
// (micro-batch 0): 0 a compute, 1 a send waiting for 0, 2 a compute
// waiting for 1 and for task 0, with task 2's host waiting for task 0's
// end (hostAfter 1). θ is B's first task (the state names no earlier
// one) and the copy C starts at task 3, so P = 3: C is tasks 3–5 with
// Micro 1, dependencies 3 → {}, 4 → {3}, 5 → {4, 3}, host wait on task 3
// (hostAfter 4), task 4 in the pipeline list, and the streams' last tasks
// moved by 3. A task of B naming another micro-batch (Micro 7) refuses the
// copy and leaves the program as it was.
func TestCopyPassByHand(t *testing.T) {
	for _, c := range []struct {
		name  string
		micro int32 // task 1's Micro
		ok    bool
	}{
		{"copied", 0, true},
		{"task of another micro-batch", 7, false},
		{"task of no micro-batch", -1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog := &Program{
				Tasks: []Task{
					{Kind: KindForward, Stream: StreamCompute, Micro: 0, Layer: 0},
					{Kind: KindSend, Stream: StreamPPSend, Micro: c.micro, Layer: -1},
					{Kind: KindForward, Stream: StreamCompute, Micro: 0, Layer: 1},
				},
				depOff: []int32{0, 0, 1},
				deps:   []int32{0, 1, 0},
				p2p:    []int32{1},
			}
			setWaits(prog, 2, 1, 0) // task 2's host waits for task 0
			b := &builder{cfg: &StepConfig{}, prog: prog}
			var start [passStateInts]int32
			for i := range start {
				start[i] = -1
			}
			fin := start
			fin[StreamCompute], fin[StreamPPSend] = 2, 1
			r := &passMark{mb: 0, at: 0, end: 3, start: start, fin: fin, other: passOther{clean: true}}
			before := *prog
			before.Tasks = append([]Task(nil), prog.Tasks...)
			before.depOff = append([]int32(nil), prog.depOff...)
			before.deps = append([]int32(nil), prog.deps...)
			before.p2p = append([]int32(nil), prog.p2p...)
			got, hosts := b.copyPass(r, &chunkPass{mb: 1}, start, passOther{clean: true})
			if got != c.ok {
				t.Fatalf("copyPass = %v, want %v", got, c.ok)
			}
			if got && !hosts {
				t.Fatalf("copyPass: no host waits reported, task 2 has one")
			}
			if !c.ok {
				if !reflect.DeepEqual(prog.Tasks, before.Tasks) || len(prog.hot) != 3 || !reflect.DeepEqual(prog.depOff, before.depOff) ||
					!reflect.DeepEqual(prog.deps, before.deps) || !reflect.DeepEqual(prog.p2p, before.p2p) {
					t.Fatalf("refused copy changed the program: %+v", prog)
				}
				return
			}
			if len(prog.Tasks) != 6 {
				t.Fatalf("%d tasks, want 6", len(prog.Tasks))
			}
			wantMicro := []int32{1, c.micro + 1, 1}
			if c.micro < 0 {
				wantMicro[1] = -1
			}
			for i, m := range wantMicro {
				task := prog.Tasks[3+i]
				src := before.Tasks[i]
				if task.Micro != m || task.Kind != src.Kind || task.Layer != src.Layer {
					t.Errorf("task %d: %+v, want task %d with Micro %d", 3+i, task, i, m)
				}
			}
			for i, w := range []int{-1, -1, 0, -1, -1, 3} {
				if h := prog.HostAfter(i); h != w {
					t.Errorf("task %d's host waits for %d, want %d", i, h, w)
				}
			}
			prog.depOff = append(prog.depOff, int32(len(prog.deps)))
			wantDeps := [][]int32{{}, {0}, {1, 0}, {}, {3}, {4, 3}}
			for i, w := range wantDeps {
				if d := prog.Deps(i); !reflect.DeepEqual(append([]int32{}, d...), w) {
					t.Errorf("task %d deps %v, want %v", i, d, w)
				}
			}
			if !reflect.DeepEqual(prog.p2p, []int32{1, 4}) {
				t.Errorf("p2p %v, want [1 4]", prog.p2p)
			}
			if b.last[StreamCompute] != 5 || b.last[StreamPPSend] != 4 || b.last[StreamTP] != -1 || b.tpRecent != -1 {
				t.Errorf("state after the copy: last compute %d, send %d, tp %d, tpRecent %d; want 5, 4, -1, -1",
					b.last[StreamCompute], b.last[StreamPPSend], b.last[StreamTP], b.tpRecent)
			}
		})
	}
}

// TestCopyPassChain copies TestCopyPassByHand's pass B again and again,
// each copy from the one before as runPass chains them: the first copy
// checks B's tasks (an emitted pass), the later ones take their source's
// check (passMark.checked) and relabel the host waits only where the
// source had some (passMark.hosts). Copy j (tasks 3j to 3j+2) must be B
// with every micro-batch j, every dependency and host wait moved by 3j,
// with and without B's host wait, and a chain from a source whose Micro
// is wrong for the copy is refused while unchecked.
func TestCopyPassChain(t *testing.T) {
	for _, host := range []bool{true, false} {
		ha := int32(0)
		if host {
			ha = 1
		}
		prog := &Program{
			Tasks: []Task{
				{Kind: KindForward, Stream: StreamCompute, Micro: 0, Layer: 0},
				{Kind: KindSend, Stream: StreamPPSend, Micro: -1, Layer: -1},
				{Kind: KindForward, Stream: StreamCompute, Micro: 0, Layer: 1},
			},
			depOff: []int32{0, 0, 1},
			deps:   []int32{0, 1, 0},
			p2p:    []int32{1},
		}
		setWaits(prog, 2, ha, 0)
		src := append([]Task(nil), prog.Tasks...)
		b := &builder{cfg: &StepConfig{}, prog: prog}
		var start [passStateInts]int32
		for i := range start {
			start[i] = -1
		}
		fin := start
		fin[StreamCompute], fin[StreamPPSend] = 2, 1
		r := &passMark{mb: 0, at: 0, end: 3, start: start, fin: fin, other: passOther{clean: true}}
		const copies = 6
		for j := 1; j <= copies; j++ {
			// every pass starts in the same state (it names no task):
			// θ is the source's first task, everything in it moves
			at := int32(len(prog.Tasks))
			ok, hosts := b.copyPass(r, &chunkPass{mb: j}, start, passOther{clean: true})
			if !ok || hosts != host {
				t.Fatalf("host %v: copy %d: copied %v, hosts %v", host, j, ok, hosts)
			}
			r.mb, r.at, r.end, r.fin = j, at, int32(len(prog.Tasks)), b.passState()
			r.checked, r.hosts = true, hosts
		}
		prog.depOff = append(prog.depOff, int32(len(prog.deps)))
		if len(prog.Tasks) != 3*(copies+1) {
			t.Fatalf("%d tasks", len(prog.Tasks))
		}
		for j := range int32(copies + 1) {
			for k, s := range src {
				w := s
				if w.Micro >= 0 {
					w.Micro = j
				}
				if got := prog.Tasks[3*j+int32(k)]; got != w {
					t.Errorf("host %v: task %d: %+v, want %+v", host, 3*j+int32(k), got, w)
				}
				wa := int32(0) // the host wait, in the played record
				if k == 2 && ha != 0 {
					wa = ha + 3*j
				}
				if got := prog.hot[3*j+int32(k)].hostAfter; got != wa {
					t.Errorf("host %v: task %d's host wait %d, want %d", host, 3*j+int32(k), got, wa)
				}
			}
			want := [][]int32{{}, {3 * j}, {3*j + 1, 3 * j}}
			for k, w := range want {
				if d := prog.Deps(int(3*j) + k); !reflect.DeepEqual(append([]int32{}, d...), w) {
					t.Errorf("host %v: task %d deps %v, want %v", host, int(3*j)+k, d, w)
				}
			}
		}
		if b.last[StreamCompute] != 3*copies+2 || b.last[StreamPPSend] != 3*copies+1 {
			t.Errorf("host %v: last compute %d, send %d", host, b.last[StreamCompute], b.last[StreamPPSend])
		}
	}
	// an unchecked source naming another micro-batch is refused, and the
	// program is left as it was
	prog := &Program{
		Tasks:  []Task{{Kind: KindForward, Stream: StreamCompute, Micro: 0}, {Kind: KindForward, Stream: StreamCompute, Micro: 5}},
		depOff: []int32{0, 0},
		deps:   []int32{0},
	}
	b := &builder{cfg: &StepConfig{}, prog: prog}
	var start [passStateInts]int32
	for i := range start {
		start[i] = -1
	}
	fin := start
	fin[StreamCompute] = 1
	r := &passMark{mb: 0, at: 0, end: 2, start: start, fin: fin, other: passOther{clean: true}}
	if ok, _ := b.copyPass(r, &chunkPass{mb: 1}, start, passOther{clean: true}); ok || len(prog.Tasks) != 2 || len(prog.deps) != 1 {
		t.Fatalf("unchecked source of two micro-batches: copied %v, %d tasks, %d dependencies", ok, len(prog.Tasks), len(prog.deps))
	}
}
