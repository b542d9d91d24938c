package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// symPipelines are the pipelined steps the symmetric end handler's tests
// play (tp, dp, pp, micro-batches, schedule); symInterference plays each
// without and with the interference model.
var (
	symPipelines = []struct {
		tp, dp, pp, m int
		sched         pipeline.Schedule
	}{
		{2, 2, 4, 8, pipeline.OneFOneB},
		{1, 4, 3, 6, pipeline.ZeroBubble},
		{1, 2, 2, 2, pipeline.GPipe},
	}
	symInterference = []Interference{{}, {132, hardware.CommCTAs{ScaleUp: 24, ScaleOut: 16, P2P: 2}, 0, true}}
)

// TestSymEndsRouteByInstance: NewSymmetric registers one end handler per
// instance, instance i's as Executor.h + i, before the host thread's; each
// knows its own instance. A play whose ends all go through one handler
// that finds the instance from the event's argument (the Executor itself:
// Handle unpacks it and hands the event to that instance's symEnds, the
// routing before play27) gives every task the same start, end and engine
// event count, with and without the interference model, whose compute
// ends are rescheduled on every rate change (instance.h as well).
func TestSymEndsRouteByInstance(t *testing.T) {
	for _, c := range symPipelines[:2] {
		l, progs := stepPrograms(t, c.tp, c.dp, c.pp, c.m, c.sched, commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond})
		for _, iv := range symInterference {
			play := func(byArg bool) *Executor {
				eng := engine.New()
				x := NewSymmetric(eng, l, progs)
				if len(x.ends) != len(x.inst) || x.hh != x.h+engine.HandlerID(len(x.inst)) {
					t.Fatalf("%d end handlers for %d instances, ends from %d, host issues %d", len(x.ends), len(x.inst), x.h, x.hh)
				}
				for i := range x.inst {
					if x.inst[i].h != x.h+engine.HandlerID(i) || x.ends[i].in != &x.inst[i] || x.ends[i].i != i || x.ends[i].x != x {
						t.Fatalf("instance %d: handler %d (ends from %d), its symEnds %+v", i, x.inst[i].h, x.h, x.ends[i])
					}
				}
				if err := x.SetInterference(iv, ownDomain{}); err != nil {
					t.Fatal(err)
				}
				if byArg {
					h := eng.Register(x)
					for i := range x.inst {
						x.inst[i].h = h
					}
				}
				x.CountEvents()
				if err := x.Run(); err != nil {
					t.Fatal(err)
				}
				return x
			}
			own, byArg := play(false), play(true)
			for i := range own.inst {
				_, _, p, os, oe := own.Instance(i)
				_, _, _, as, ae := byArg.Instance(i)
				if !slices.Equal(os, as) || !slices.Equal(oe, ae) || !slices.Equal(own.inst[i].events, byArg.inst[i].events) {
					for k := range p.Tasks {
						if os[k] != as[k] || oe[k] != ae[k] || own.inst[i].events[k] != byArg.inst[i].events[k] {
							t.Fatalf("%+v, %+v: stage %d task %d %s: [%d, %d] in %d events, routed by argument [%d, %d] in %d",
								c, iv, i, k, p.Tasks[k].Name.String(), os[k], oe[k], own.inst[i].events[k], as[k], ae[k], byArg.inst[i].events[k])
						}
					}
				}
			}
			if own.eng.Executed() != byArg.eng.Executed() || own.eng.Executed() == 0 {
				t.Errorf("%+v, %+v: %d events, routed by argument %d", c, iv, own.eng.Executed(), byArg.eng.Executed())
			}
		}
	}
}

// TestFinishIsFullModeOnly: symmetric mode completes its tasks in
// symEnds.Handle; finish, reached through the runner's CollectiveDone and
// Executor.Handle in full mode only, refuses a symmetric executor instead
// of completing a task without releasing or counting what Handle does.
func TestFinishIsFullModeOnly(t *testing.T) {
	l, progs := stepPrograms(t, 2, 2, 2, 4, pipeline.OneFOneB, commPricer{unit: engine.Millisecond, comm: engine.Microsecond})
	x := NewSymmetric(engine.New(), l, progs)
	defer func() {
		if recover() == nil {
			t.Error("finish on a symmetric executor did not panic")
		}
	}()
	x.finish(0, 0)
}

// TestRecvEndsWithItsSend: a send's receive, on the peer stage's
// instance, completes right after the send (symEnds.Handle calls the
// peer's handler for it) and is no engine event of its own: each receive
// starts and ends with its send, keeps an event count of 0 while its send
// counts at least one, and the tasks' counts sum to the engine's events,
// on pipelines with and without the interference model. It fails if the
// receive's count is not taken back before Handle adds one, or if the
// receive is not completed.
func TestRecvEndsWithItsSend(t *testing.T) {
	for _, c := range symPipelines {
		l, progs := stepPrograms(t, c.tp, c.dp, c.pp, c.m, c.sched, commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond})
		for _, iv := range symInterference {
			eng := engine.New()
			x := NewSymmetric(eng, l, progs)
			if err := x.SetInterference(iv, ownDomain{}); err != nil {
				t.Fatal(err)
			}
			x.CountEvents()
			if err := x.Run(); err != nil {
				t.Fatal(err)
			}
			sends, sum := 0, int64(0)
			for i := range x.inst {
				_, _, p, start, end := x.Instance(i)
				for k := range p.Tasks {
					sum += int64(x.inst[i].events[k])
					if p.Tasks[k].Kind != KindSend {
						continue
					}
					sends++
					j, m := p.Tasks[k].p2p()
					_, _, q, rs, re := x.Instance(j)
					if q.Tasks[m].Kind != KindRecv || rs[m] != start[k] || re[m] != end[k] || end[k] < 0 {
						t.Fatalf("%+v, %+v: stage %d send %d [%d, %d]; its receive (stage %d task %d, %v) [%d, %d]",
							c, iv, i, k, start[k], end[k], j, m, q.Tasks[m].Kind, rs[m], re[m])
					}
					if x.inst[i].events[k] < 1 || x.inst[j].events[m] != 0 {
						t.Fatalf("%+v, %+v: stage %d send %d counts %d events, its receive %d", c, iv, i, k, x.inst[i].events[k], x.inst[j].events[m])
					}
				}
			}
			if sends == 0 || sum != int64(eng.Executed()) {
				t.Errorf("%+v, %+v: %d sends; the tasks' event counts sum to %d, the engine ran %d", c, iv, sends, sum, eng.Executed())
			}
		}
	}
}

// TestSendLinkMatchesTask: a play's dense list of each stage's sends
// (fillLinks) holds exactly the program's sends, in task order, and
// symEnds.link gives every send its Task's peer and match (Task.p2p),
// whatever the order of the lookups (program order, as the play mostly
// asks; backwards and shuffled, which take the binary search), for
// programs built alone and in an Arena (copied passes and layers), and
// for a program without its p2p list (the Task fallback). It fails if
// fillLinks drops or misorders a send, or link returns another entry.
func TestSendLinkMatchesTask(t *testing.T) {
	for _, c := range symPipelines {
		for _, arena := range []bool{false, true} {
			l, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, c.sched)
			if arena {
				cfg.Arena = new(Arena)
			}
			progs, err := Build(cfg, commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			x := NewSymmetric(engine.New(), l, progs)
			sends := 0
			for i := range x.inst {
				se := &x.ends[i]
				p := x.inst[i].prog
				var want []sendLink
				for k := range p.Tasks {
					if p.Tasks[k].Kind == KindSend {
						j, m := p.Tasks[k].p2p()
						want = append(want, sendLink{int32(k), int32(j), int32(m)})
					}
				}
				sends += len(want)
				if !slices.Equal(se.links, want) {
					t.Fatalf("%+v arena %v: stage %d links %v, want the sends %v", c, arena, i, se.links, want)
				}
				orders := [][]sendLink{want, slices.Clone(want), slices.Clone(want)}
				slices.Reverse(orders[1])
				for k := range orders[2] { // a fixed shuffle: every third, then the rest
					orders[2][k] = want[(3*k)%len(want)]
				}
				if len(want)%3 == 0 {
					orders = orders[:2] // (3k mod n is no permutation then)
				}
				for _, order := range orders {
					at := 0
					for _, w := range order {
						if j, m := se.link(int(w.t), &at); j != int(w.peer) || m != int(w.match) {
							t.Fatalf("%+v arena %v: stage %d send %d: link %d, %d, want %d, %d", c, arena, i, w.t, j, m, w.peer, w.match)
						}
					}
				}
				// No list: every send from its Task.
				bare := symEnds{x: x, in: se.in}
				at := 0
				for _, w := range want {
					if j, m := bare.link(int(w.t), &at); j != int(w.peer) || m != int(w.match) {
						t.Fatalf("%+v arena %v: stage %d send %d without links: %d, %d, want %d, %d", c, arena, i, w.t, j, m, w.peer, w.match)
					}
				}
			}
			if sends == 0 {
				t.Errorf("%+v arena %v: no sends", c, arena)
			}
		}
	}
}
