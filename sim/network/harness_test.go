package network

import (
	"fmt"
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/units"
)

// Test harness: a fabric on a fresh engine, transfers started at given
// times, every completion recorded, and after every event the fabric
// handles its invariants checked and (flow fidelity) every active flow's
// rate compared with a from-scratch max-min solve.

type xfer struct {
	at    engine.Time
	route []int32
	bytes float64
}

type completion struct {
	tag int64
	at  engine.Time
}

type harness struct {
	t      testing.TB
	e      *engine.Engine
	f      *Fabric
	h      engine.HandlerID
	funcs  []func(now engine.Time)
	done   []completion
	doneAt map[int64]engine.Time
	// checkRates compares rates with the reference solver after each event.
	checkRates bool
	events     int
}

func (h *harness) TransferDone(now engine.Time, tag int64) {
	if _, dup := h.doneAt[tag]; dup {
		h.t.Fatalf("transfer %d completed twice", tag)
	}
	h.doneAt[tag] = now
	h.done = append(h.done, completion{tag, now})
}

func (h *harness) Handle(now engine.Time, arg int64) { h.funcs[arg](now) }

func newHarness(t testing.TB, bw []float64, lat []engine.Time, fid Fidelity) *harness {
	t.Helper()
	if lat == nil {
		lat = make([]engine.Time, len(bw))
	}
	if err := CheckLinks(rates(bw), lat); err != nil {
		t.Fatal(err)
	}
	e := engine.New()
	h := &harness{t: t, e: e, f: New(e, rates(bw), lat, fid), doneAt: map[int64]engine.Time{}, checkRates: true}
	h.h = e.Register(h)
	h.f.afterEvent = func(now engine.Time) {
		h.events++
		if err := h.f.CheckInvariants(); err != nil {
			t.Fatalf("at %v: %v", now, err)
		}
		if h.checkRates && fid == Flow {
			if err := checkAgainstReference(h.f); err != nil {
				t.Fatalf("at %v: %v", now, err)
			}
		}
	}
	return h
}

// at runs fn at simulated time t.
func (h *harness) at(t engine.Time, fn func(now engine.Time)) {
	h.funcs = append(h.funcs, fn)
	h.e.At(t, h.h, int64(len(h.funcs)-1))
}

// start schedules transfer tag = index in xs.
func (h *harness) start(xs []xfer) {
	for i, x := range xs {
		if err := h.f.CheckTransfer(x.route, units.Bytes(x.bytes)); err != nil {
			h.t.Fatal(err)
		}
		tag := int64(i)
		x := x
		h.at(x.at, func(engine.Time) { h.f.Start(x.route, units.Bytes(x.bytes), h, tag) })
	}
}

func (h *harness) run() {
	h.e.Run()
	if err := h.f.CheckInvariants(); err != nil {
		h.t.Fatal(err)
	}
}

// referenceRates is plain progressive filling over every active flow,
// written independently of the incremental solver: while some flow is
// unfixed, find the smallest fair share (capacity left / unfixed flows) over
// all links and fix every unfixed flow on a link with that share.
// O(links × flows) per round; for tests only.
func referenceRates(bw []float64, routes [][]int32) []float64 {
	rate := make([]float64, len(routes))
	fixed := make([]bool, len(routes))
	left := len(routes)
	for left > 0 {
		best := math.Inf(1)
		for l := range bw {
			used, n := 0.0, 0
			for i, r := range routes {
				for _, x := range r {
					if int(x) != l {
						continue
					}
					if fixed[i] {
						used += rate[i]
					} else {
						n++
					}
				}
			}
			if n > 0 {
				best = math.Min(best, math.Max(bw[l]-used, 0)/float64(n))
			}
		}
		// Fix the flows on every link whose share is best (up to noise).
		var fix []int
		for l := range bw {
			used, n := 0.0, 0
			for i, r := range routes {
				for _, x := range r {
					if int(x) == l {
						if fixed[i] {
							used += rate[i]
						} else {
							n++
						}
					}
				}
			}
			if n == 0 || math.Max(bw[l]-used, 0)/float64(n) > best*(1+1e-12) {
				continue
			}
			for i, r := range routes {
				if fixed[i] {
					continue
				}
				for _, x := range r {
					if int(x) == l {
						fix = append(fix, i)
						break
					}
				}
			}
		}
		for _, i := range fix {
			if !fixed[i] {
				fixed[i] = true
				rate[i] = best
				left--
			}
		}
	}
	return rate
}

// links is the flow's route as link ids.
func (fl *flow) links() []int32 {
	var r []int32
	for _, hp := range fl.hops() {
		r = append(r, hp.link)
	}
	return r
}

// checkAgainstReference compares every active flow's rate with
// referenceRates over the active flows.
func checkAgainstReference(f *Fabric) error {
	var routes [][]int32
	var ids []int
	for i := range f.flows {
		if f.hot[i].state == flowActive {
			routes = append(routes, f.flows[i].links())
			ids = append(ids, i)
		}
	}
	want := referenceRates(f.bw, routes)
	for k, i := range ids {
		got := f.hot[i].rate
		if math.Abs(got-want[k]) > 1e-9*math.Max(want[k], 1) {
			return fmt.Errorf("flow slot %d (route %v): rate %v, reference max-min %v", i, f.flows[i].links(), got, want[k])
		}
	}
	return nil
}

// rateOf returns the rate of the active flow started with the given
// transfer tag (via its delivery slot).
func (h *harness) rateOf(tag int64) float64 {
	for i := range h.f.flows {
		fl := &h.f.flows[i]
		if h.f.hot[i].state == flowActive && h.f.dels[fl.del].tag == tag {
			return h.f.hot[i].rate
		}
	}
	h.t.Fatalf("no active flow with tag %d", tag)
	return 0
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

// rates types a list of link bandwidths (bytes/s).
func rates(bw []float64) []units.BytesPerSecond {
	out := make([]units.BytesPerSecond, len(bw))
	for i, b := range bw {
		out[i] = units.BytesPerSecond(b)
	}
	return out
}
