package network

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/units"
)

// Units in these tests: a capacity of 1e9 bytes/s moves one byte per
// nanosecond, so sizes in bytes read directly as nanoseconds at that rate.
const (
	gbps = 1e9 // 1 GB/s in bytes/s
	sec  = engine.Second
	ms   = engine.Millisecond
)

// TestFlowContention covers the hand-computed contention cases. Each case
// lists links (capacity, latency), transfers (start, route, bytes), the
// expected completion time of every transfer and, optionally, the expected
// rates just after time 0 (probed at 1 ns).
func TestFlowContention(t *testing.T) {
	cases := []struct {
		name  string
		bw    []float64
		lat   []engine.Time
		xs    []xfer
		want  []engine.Time // completion (done) time per transfer tag
		rates []float64     // rates at t = 1 ns, per tag (nil: not checked)
	}{
		{
			// One link of 1 GB/s, latency 1 µs, two flows of 1e9 bytes
			// from t=0. Max-min: each gets 1e9/2 = 5e8 B/s, so each
			// transmits its 1e9 bytes in 2 s, and arrives 1 µs later:
			// 2e9 + 1e3 ns.
			name:  "two flows share one link",
			bw:    []float64{1 * gbps},
			lat:   []engine.Time{1000},
			xs:    []xfer{{0, []int32{0}, 1e9}, {0, []int32{0}, 1e9}},
			want:  []engine.Time{2*sec + 1000, 2*sec + 1000},
			rates: []float64{5e8, 5e8},
		},
		{
			// A crosses link 0 (4 GB/s) then link 1 (1 GB/s); X uses link
			// 0 only. Filling: link 1's share is 1e9/1 = 1e9, link 0's is
			// 4e9/2 = 2e9, so link 1 saturates first: A = 1e9. Link 0 has
			// 3e9 left for X alone: X = 3e9.
			// A: 1e9 bytes / 1e9 = 1 s, + latencies 100 + 200 ns.
			// X: 6e9 bytes; by 1 s it has sent 3e9; then alone on link 0
			// at 4e9 the remaining 3e9 take 0.75 s: ends at 1.75 s, + 100 ns.
			name:  "flow crossing two bottlenecks of different capacity",
			bw:    []float64{4 * gbps, 1 * gbps},
			lat:   []engine.Time{100, 200},
			xs:    []xfer{{0, []int32{0, 1}, 1e9}, {0, []int32{0}, 6e9}},
			want:  []engine.Time{sec + 300, 1750*ms + 100},
			rates: []float64{1e9, 3e9},
		},
		{
			// Incast: 8 senders with their own 10 GB/s uplinks (links
			// 1..8) into one 1 GB/s downlink (link 0). Each flow's share
			// of the downlink is 1e9/8 = 1.25e8 and the uplinks are far
			// from full, so every flow runs at 1.25e8; 1.25e8 bytes take
			// 1 s for each.
			name: "incast of 8 equal flows",
			bw:   []float64{1 * gbps, 10 * gbps, 10 * gbps, 10 * gbps, 10 * gbps, 10 * gbps, 10 * gbps, 10 * gbps, 10 * gbps},
			xs: []xfer{
				{0, []int32{1, 0}, 1.25e8}, {0, []int32{2, 0}, 1.25e8}, {0, []int32{3, 0}, 1.25e8}, {0, []int32{4, 0}, 1.25e8},
				{0, []int32{5, 0}, 1.25e8}, {0, []int32{6, 0}, 1.25e8}, {0, []int32{7, 0}, 1.25e8}, {0, []int32{8, 0}, 1.25e8},
			},
			want:  []engine.Time{sec, sec, sec, sec, sec, sec, sec, sec},
			rates: []float64{1.25e8, 1.25e8, 1.25e8, 1.25e8, 1.25e8, 1.25e8, 1.25e8, 1.25e8},
		},
		{
			// Incast of 4 unequal flows (1e8, 2e8, 3e8, 4e8 bytes) into a
			// 1 GB/s downlink. Phase 1: 4 flows at 2.5e8 until the 1e8
			// one ends at 0.4 s (each has sent 1e8). Phase 2: 3 flows at
			// 1e9/3 with 1e8, 2e8, 3e8 left: 1e8 more takes 0.3 s, so the
			// second ends at 0.7 s. Phase 3: 2 flows at 5e8 with 1e8, 2e8
			// left: 0.2 s, third ends at 0.9 s. Phase 4: the last at 1e9
			// with 1e8 left: ends at 1.0 s (= 1e9 bytes total / 1 GB/s).
			name: "incast of 4 unequal flows",
			bw:   []float64{1 * gbps, 10 * gbps, 10 * gbps, 10 * gbps, 10 * gbps},
			xs: []xfer{
				{0, []int32{1, 0}, 1e8}, {0, []int32{2, 0}, 2e8}, {0, []int32{3, 0}, 3e8}, {0, []int32{4, 0}, 4e8},
			},
			want:  []engine.Time{400 * ms, 700 * ms, 900 * ms, sec},
			rates: []float64{2.5e8, 2.5e8, 2.5e8, 2.5e8},
		},
		{
			// A (1e9 bytes) starts alone at t=0 on a 1 GB/s link and has
			// sent 5e8 by 0.5 s, when B (2.5e8 bytes) arrives. Both then
			// run at 5e8: B needs 0.5 s and ends at 1.0 s; by then A has
			// sent 2.5e8 more and has 2.5e8 left, alone at 1e9: 0.25 s,
			// ends at 1.25 s.
			name:  "flow arrives mid-flight",
			bw:    []float64{1 * gbps},
			xs:    []xfer{{0, []int32{0}, 1e9}, {500 * ms, []int32{0}, 2.5e8}},
			want:  []engine.Time{1250 * ms, sec},
			rates: []float64{1e9},
		},
		{
			// Classic three-flow max-min case. Link 0: 3 GB/s, link 1:
			// 1 GB/s. A crosses both, B uses link 0, C uses link 1.
			// Shares: link 1: 1e9/2 = 5e8 (A, C); link 0: 3e9/2 = 1.5e9
			// (A, B). Link 1 saturates first: A = C = 5e8. A is limited
			// by link 1, which frees link 0 for B: B = 3e9 - 5e8 = 2.5e9.
			// Sizes A 1e9, B 5e9, C 5e8. C ends at 5e8/5e8 = 1 s; then A
			// has 5e8 left, B 5e9 - 2.5e9 = 2.5e9. Now link 1 gives A
			// 1e9, link 0 gives 1.5e9 each, so A = 1e9 (link 1) and
			// B = 2e9. A ends at 1 + 0.5 = 1.5 s; B has 2.5e9 - 2e9·0.5
			// = 1.5e9 left, alone at 3e9: 0.5 s, ends at 2.0 s.
			name:  "three-flow max-min: a flow limited elsewhere frees capacity",
			bw:    []float64{3 * gbps, 1 * gbps},
			xs:    []xfer{{0, []int32{0, 1}, 1e9}, {0, []int32{0}, 5e9}, {0, []int32{1}, 5e8}},
			want:  []engine.Time{1500 * ms, 2 * sec, sec},
			rates: []float64{5e8, 2.5e9, 5e8},
		},
		{
			// Zero bytes and an empty route complete after the route
			// latency (zero for the empty route) without occupying links.
			name: "zero bytes and empty route",
			bw:   []float64{1 * gbps, 1 * gbps},
			lat:  []engine.Time{70, 30},
			xs:   []xfer{{5, []int32{0, 1}, 0}, {5, nil, 1e6}},
			want: []engine.Time{105, 5},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.bw, c.lat, Flow)
			h.start(c.xs)
			if c.rates != nil {
				h.at(1, func(engine.Time) {
					for tag, want := range c.rates {
						if got := h.rateOf(int64(tag)); got != want {
							t.Errorf("rate of transfer %d at 1 ns = %v, want %v", tag, got, want)
						}
					}
				})
			}
			h.run()
			for tag, want := range c.want {
				if got, ok := h.doneAt[int64(tag)]; !ok || got != want {
					t.Errorf("transfer %d done at %v (%d ns), want %v (%d ns)", tag, got, got, want, want)
				}
			}
			if h.f.InFlight() != 0 || h.f.ActiveFlows() != 0 {
				t.Errorf("after the run: %d in flight, %d active", h.f.InFlight(), h.f.ActiveFlows())
			}
		})
	}
}

// TestThreeFlowStats checks per-link bytes and busy time in the three-flow
// case above, mid-run and at the end. Link 0 carries A and B and is busy
// from 0 to 2 s; link 1 carries A and C and is busy from 0 to 1.5 s.
// At 0.5 s: link 0 has carried (5e8 + 2.5e9)·0.5 = 1.5e9 bytes, link 1
// (5e8 + 5e8)·0.5 = 5e8. At the end: link 0: A + B = 6e9, link 1: A + C =
// 1.5e9.
func TestThreeFlowStats(t *testing.T) {
	h := newHarness(t, []float64{3 * gbps, 1 * gbps}, nil, Flow)
	h.start([]xfer{{0, []int32{0, 1}, 1e9}, {0, []int32{0}, 5e9}, {0, []int32{1}, 5e8}})
	h.at(500*ms, func(engine.Time) {
		if got := h.f.LinkBytes(0); got != 1.5e9 {
			t.Errorf("link 0 bytes at 0.5 s = %v, want 1.5e9", got)
		}
		if got := h.f.LinkBytes(1); got != 5e8 {
			t.Errorf("link 1 bytes at 0.5 s = %v, want 5e8", got)
		}
		if got := h.f.LinkBusy(0); got != 500*ms {
			t.Errorf("link 0 busy at 0.5 s = %v, want 0.5 s", got)
		}
		if got := h.f.ActiveFlows(); got != 3 {
			t.Errorf("active flows at 0.5 s = %d, want 3", got)
		}
	})
	h.run()
	for _, c := range []struct {
		link  int
		bytes float64
		busy  engine.Time
	}{{0, 6e9, 2 * sec}, {1, 1.5e9, 1500 * ms}} {
		if got := h.f.LinkBytes(c.link); got != units.Bytes(c.bytes) {
			t.Errorf("link %d bytes = %v, want %v", c.link, got, c.bytes)
		}
		if got := h.f.LinkBusy(c.link); got != c.busy {
			t.Errorf("link %d busy = %v, want %v", c.link, got, c.busy)
		}
	}
}

// TestFlowBusyGaps: link 0 (1 GB/s) carries A (1e9 bytes) over [0, 1 s)
// and B (5e8 bytes) over [2 s, 2.5 s); link 1 carries only B. Busy time
// counts the two periods only: 1.5 s on link 0, 0.5 s on link 1; at 1.5 s
// (idle gap) link 0 has been busy 1 s.
func TestFlowBusyGaps(t *testing.T) {
	h := newHarness(t, []float64{gbps, gbps}, nil, Flow)
	h.start([]xfer{{0, []int32{0}, 1e9}, {2 * sec, []int32{1, 0}, 5e8}})
	h.at(1500*ms, func(engine.Time) {
		if got := h.f.LinkBusy(0); got != sec {
			t.Errorf("link 0 busy at 1.5 s = %v, want 1 s", got)
		}
		if got := h.f.ActiveFlows(); got != 0 {
			t.Errorf("%d active flows at 1.5 s, want 0", got)
		}
	})
	h.run()
	for _, c := range []struct {
		link  int
		busy  engine.Time
		bytes float64
	}{{0, 1500 * ms, 1.5e9}, {1, 500 * ms, 5e8}} {
		if got := h.f.LinkBusy(c.link); got != c.busy {
			t.Errorf("link %d busy = %v, want %v", c.link, got, c.busy)
		}
		if got := h.f.LinkBytes(c.link); got != units.Bytes(c.bytes) {
			t.Errorf("link %d bytes = %v, want %v", c.link, got, c.bytes)
		}
	}
}

// TestAnalytic: transfer time = sum of latencies + bytes / bottleneck,
// independent of other traffic. Links: 1 GB/s (lat 100 ns) and 0.5 GB/s
// (lat 400 ns). A: 1e9 bytes over both → 500 ns + 1e9/5e8 = 2 s.
// B: 3e8 bytes over link 0 from 1 s → 1 s + 100 ns + 0.3 s (A does not slow
// it). Link 0 is busy over [0, 2 s) ∪ [1 s, 1.3 s) = 2 s and carried 1.3e9
// bytes; at 1.5 s its busy time so far is 1.5 s.
func TestAnalytic(t *testing.T) {
	h := newHarness(t, []float64{1 * gbps, 0.5 * gbps}, []engine.Time{100, 400}, Analytic)
	h.start([]xfer{{0, []int32{0, 1}, 1e9}, {sec, []int32{0}, 3e8}})
	h.at(1500*ms, func(engine.Time) {
		if got := h.f.LinkBusy(0); got != 1500*ms {
			t.Errorf("link 0 busy at 1.5 s = %v, want 1.5 s", got)
		}
		if got := h.f.ActiveFlows(); got != 1 {
			t.Errorf("active at 1.5 s = %d, want 1", got)
		}
	})
	h.run()
	want := []engine.Time{2*sec + 500, 1300*ms + 100}
	for tag, w := range want {
		if got := h.doneAt[int64(tag)]; got != w {
			t.Errorf("transfer %d done at %v, want %v", tag, got, w)
		}
	}
	if got := h.f.LinkBusy(0); got != 2*sec {
		t.Errorf("link 0 busy = %v, want 2 s", got)
	}
	if got := h.f.LinkBytes(0); got != 1.3e9 {
		t.Errorf("link 0 bytes = %v, want 1.3e9", got)
	}
	if got := h.f.LinkBusy(1); got != 2*sec {
		t.Errorf("link 1 busy = %v, want 2 s", got)
	}
}

// TestLoneFlowAnalyticEqualsFlow: a flow alone on its route gets the route's
// bottleneck bandwidth at flow fidelity, so both fidelities give the same
// completion time to the nanosecond: latencies + ceil(bytes / bottleneck).
func TestLoneFlowAnalyticEqualsFlow(t *testing.T) {
	bw := []float64{3e9, 7.3e9, 5e9, 25e9}
	lat := []engine.Time{100, 250, 400, 33}
	routes := [][]int32{{0, 1, 2}, {3}, {1, 3}, {2, 0}}
	sizes := []float64{1, 12345678, 1 << 30, 999.5, 7e9}
	for _, r := range routes {
		for _, b := range sizes {
			var got [2]engine.Time
			for _, fid := range []Fidelity{Analytic, Flow} {
				h := newHarness(t, bw, lat, fid)
				h.start([]xfer{{3, r, b}})
				h.run()
				got[fid] = h.doneAt[0]
			}
			if got[Analytic] != got[Flow] {
				t.Errorf("route %v, %v bytes: analytic %d ns, flow %d ns", r, b, got[Analytic], got[Flow])
			}
			// Closed form.
			min, sum := bw[r[0]], engine.Time(0)
			for _, l := range r {
				min = minf(min, bw[l])
				sum += lat[l]
			}
			if want := 3 + sum + txTime(b, min); got[Flow] != want {
				t.Errorf("route %v, %v bytes: %d ns, closed form %d ns", r, b, got[Flow], want)
			}
		}
	}
}

func minf(a, b float64) float64 {
	if a < b {
		return a
	}
	return b
}

// TestChunkingMetamorphic: on an idle path, splitting a transfer into k
// chunks must not change when its last byte arrives.
//   - All chunks started together share the path equally, each at B/k of the
//     bottleneck, and all end when B bytes would have: exactly as one
//     transfer.
//   - Chunks sent back to back (the next starts when the previous arrives,
//     zero latency) end within k ns of one transfer: each chunk's time is
//     rounded up to a whole nanosecond at most once.
func TestChunkingMetamorphic(t *testing.T) {
	bw := []float64{12.5e9, 50e9}
	const total = 3e9 + 7
	single := func(lat []engine.Time) engine.Time {
		h := newHarness(t, bw, lat, Flow)
		h.start([]xfer{{0, []int32{0, 1}, total}})
		h.run()
		return h.doneAt[0]
	}
	for _, k := range []int{2, 3, 8, 64} {
		lat := []engine.Time{500, 700}
		want := single(lat)
		h := newHarness(t, bw, lat, Flow)
		xs := make([]xfer, k)
		for i := range xs {
			xs[i] = xfer{0, []int32{0, 1}, total / float64(k)}
		}
		h.start(xs)
		h.run()
		var last engine.Time
		for _, c := range h.done {
			last = max(last, c.at)
		}
		if d := last - want; d < -1 || d > 1 {
			t.Errorf("k=%d concurrent chunks end at %d ns, one transfer at %d ns", k, last, want)
		}

		// Back to back, zero latency.
		want = single(nil)
		h = newHarness(t, bw, nil, Flow)
		c := &chainer{h: h, left: k, bytes: total / float64(k)}
		h.at(0, func(engine.Time) { c.TransferDone(0, 0) })
		h.run()
		if d := c.end - want; d < 0 || d > engine.Time(k) {
			t.Errorf("k=%d back-to-back chunks end at %d ns, one transfer at %d ns (allowed +%d)", k, c.end, want, k)
		}
	}
}

type chainer struct {
	h     *harness
	left  int
	bytes float64
	end   engine.Time
}

func (c *chainer) TransferDone(now engine.Time, _ int64) {
	c.end = now
	if c.left == 0 {
		return
	}
	c.left--
	c.h.f.Start([]int32{0, 1}, units.Bytes(c.bytes), c, 0)
}

// TestZeroCapacity: a flow over a zero-capacity link never completes and
// gets rate 0; a flow sharing its other link is not held back by it (its
// rate there is 0) and completes normally: 1e9 bytes at 1 GB/s = 1 s.
func TestZeroCapacity(t *testing.T) {
	h := newHarness(t, []float64{0, 1 * gbps}, nil, Flow)
	h.start([]xfer{{0, []int32{1, 0}, 1e6}, {0, []int32{1}, 1e9}})
	h.run()
	if _, ok := h.doneAt[0]; ok {
		t.Errorf("flow over a zero-capacity link completed")
	}
	if got := h.doneAt[1]; got != sec {
		t.Errorf("flow done at %v, want 1 s", got)
	}
	if h.f.ActiveFlows() != 1 || h.f.InFlight() != 1 {
		t.Errorf("active %d in flight %d, want 1 and 1", h.f.ActiveFlows(), h.f.InFlight())
	}

	ha := newHarness(t, []float64{0, 1 * gbps}, nil, Analytic)
	ha.start([]xfer{{0, []int32{1, 0}, 1e6}})
	ha.run()
	if len(ha.done) != 0 || ha.e.Now() != 0 {
		t.Errorf("analytic transfer over a zero-capacity link completed at %v", ha.e.Now())
	}
}

// TestSameInstantBatching: transfers started at one instant by different
// events are solved once; their deliveries starting new transfers at the
// completion instant are batched with the departures.
func TestSameInstantBatching(t *testing.T) {
	h := newHarness(t, []float64{gbps, gbps}, nil, Flow)
	var xs []xfer
	for i := 0; i < 10; i++ {
		xs = append(xs, xfer{0, []int32{int32(i % 2)}, 1e6})
	}
	h.start(xs)
	h.run()
	// One solve at t=0 for the ten arrivals, one at 5 ms when all ten
	// depart (each link: 5 flows at 2e8 B/s, 1e6 bytes → 5 ms).
	if s := h.f.Stats().Solves; s != 2 {
		t.Errorf("%d solves, want 2", s)
	}
	for tag := range xs {
		if got := h.doneAt[int64(tag)]; got != 5*ms {
			t.Errorf("transfer %d done at %v, want 5 ms", tag, got)
		}
	}
}

// TestNilDone: a transfer without a callback still runs, occupies its link
// and frees it: the second transfer (1e9 bytes at 1 GB/s) shares the link
// for the first 1 s, so it ends at 1.5 s (5e8 sent by 1 s, 5e8 alone).
func TestNilDone(t *testing.T) {
	for _, fid := range []Fidelity{Analytic, Flow} {
		h := newHarness(t, []float64{gbps}, nil, fid)
		h.at(0, func(engine.Time) { h.f.Start([]int32{0}, 5e8, nil, 0) })
		h.start([]xfer{{0, []int32{0}, 1e9}})
		h.run()
		want := 1500 * ms
		if fid == Analytic {
			want = sec
		}
		if got := h.doneAt[0]; got != want || h.f.InFlight() != 0 {
			t.Errorf("%v: done at %v with %d in flight, want %v and 0", fid, got, h.f.InFlight(), want)
		}
	}
}

func TestParseFidelity(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Fidelity
		err  bool
	}{{"analytic", Analytic, false}, {"flow", Flow, false}, {"Flow", 0, true}, {"", 0, true}, {"packet", 0, true}} {
		got, err := ParseFidelity(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseFidelity(%q) = %v, %v", c.in, got, err)
		}
		if err == nil && got.String() != c.in {
			t.Errorf("%v.String() = %q", got, got.String())
		}
		if err != nil && !strings.Contains(err.Error(), "valid: analytic, flow") {
			t.Errorf("error %q does not list the valid choices", err)
		}
	}
}

func TestCheckInputs(t *testing.T) {
	for _, c := range []struct {
		bw   []float64
		lat  []engine.Time
		want string
	}{
		{[]float64{1, 2}, []engine.Time{0}, "2 bandwidths but 1 latencies"},
		{[]float64{1, -2}, []engine.Time{0, 0}, "bandwidth[1] = -2"},
		{[]float64{nan()}, []engine.Time{0}, "bandwidth[0] = NaN"},
		{[]float64{inf()}, []engine.Time{0}, "bandwidth[0] = +Inf"},
		{[]float64{1}, []engine.Time{-1}, "latency[0] = -1ns"},
		{[]float64{0, 1}, []engine.Time{0, 5}, ""},
	} {
		err := CheckLinks(rates(c.bw), c.lat)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckLinks(%v, %v) = %v, want %q", c.bw, c.lat, err, c.want)
		}
	}
	f := New(engine.New(), []units.BytesPerSecond{1, 1, 1}, make([]engine.Time, 3), Flow)
	for _, c := range []struct {
		route []int32
		bytes float64
		want  string
	}{
		{[]int32{0, 3}, 1, "route[1] = 3: link id out of range [0, 3)"},
		{[]int32{-1}, 1, "route[0] = -1"},
		{[]int32{0}, -1, "bytes = -1"},
		{[]int32{1, 2, 1}, 1, "route[2] = 1 repeats route[0]"},
		{[]int32{0}, nan(), "bytes = NaN"},
		{[]int32{0}, inf(), "bytes = +Inf"},
		{nil, 0, ""},
		{[]int32{2, 1, 0}, 5, ""},
	} {
		err := f.CheckTransfer(c.route, units.Bytes(c.bytes))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckTransfer(%v, %v) = %v, want %q", c.route, c.bytes, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	}
}

func TestTxTime(t *testing.T) {
	for _, c := range []struct {
		bytes, rate float64
		want        engine.Time
	}{
		{0, 1e9, 0},
		{-5, 1e9, 0},
		{1, 0, engine.Forever},
		{1, 1e9, 1},
		{1, 3e9, 1},             // 0.33 ns rounds up
		{1e9, 5e8, 2 * sec},     // exact
		{1e8, 1e9 / 3.0, 3e8},   // 0.30000000000000004 s: float noise, not a nanosecond
		{1e8 + 1, 1e9, 1e8 + 1}, // exact
		{1e30, 1, engine.Forever},
	} {
		if got := txTime(c.bytes, c.rate); got != c.want {
			t.Errorf("txTime(%v, %v) = %d, want %d", c.bytes, c.rate, got, c.want)
		}
	}
}

// TestCheckInvariantsDetects corrupts a running fabric in several ways and
// expects CheckInvariants to name each problem.
func TestCheckInvariantsDetects(t *testing.T) {
	for _, c := range []struct {
		name    string
		corrupt func(f *Fabric)
		want    string
	}{
		{"rate above capacity", func(f *Fabric) { f.hot[0].rate = 2 * gbps }, "above its capacity"},
		{"zero rate", func(f *Fabric) { f.hot[1].rate = 0 }, "has rate 0"},
		{"wrong position", func(f *Fabric) { f.flows[0].hops()[0].pos = 1 }, "disagrees with the flow's route"},
		{"lost from heap", func(f *Fabric) { f.fh.at[1].b = -1 }, "missing from the completion heap"},
		{"stale heap key", func(f *Fabric) { f.flows[1].finish++ }, "in the completion heap at"},
		{"overdue", func(f *Fabric) { f.flows[0].finish = 0 }, "should have finished"},
		{"counter", func(f *Fabric) { f.nActive++ }, "active flows, counter says"},
		{"callbacks", func(f *Fabric) { f.inFlight++ }, "transfers in flight"},
		{"inactive listed", func(f *Fabric) { f.hot[0].state = flowFree }, "not active"},
	} {
		e := engine.New()
		f := New(e, []units.BytesPerSecond{gbps}, []engine.Time{0}, Flow)
		f.Start([]int32{0}, 1e9, nil, 0)
		f.Start([]int32{0}, 1e9, nil, 1)
		e.At(sec, e.Register(noop{}), 0) // move the clock to 1 s
		e.RunUntil(sec)
		if err := f.CheckInvariants(); err != nil {
			t.Fatalf("%s: before corruption: %v", c.name, err)
		}
		c.corrupt(f)
		if err := f.CheckInvariants(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: CheckInvariants() = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

type noop struct{}

func (noop) Handle(engine.Time, int64) {}

// TestAnalyticChanged: after each round of transfers, every link whose
// LinkBytes or LinkBusy moved is in Changed's list, including a link held
// open by a transfer over a zero-bandwidth link (its busy time grows with
// Now), no link appears twice, each listed link's figures beside it are
// those read at the previous round, and Pending says which links the next
// Changed lists.
func TestAnalyticChanged(t *testing.T) {
	bw := []units.BytesPerSecond{gbps, 2 * gbps, 0, gbps, 4 * gbps, gbps}
	lat := make([]engine.Time, len(bw))
	e := engine.New()
	f := New(e, bw, lat, Analytic)
	f.TrackChanges()
	routes := [][]int32{{0, 1}, {3}, {1, 4, 5}, {2, 3}, {4}, {0, 5}}
	prevB := make([]units.Bytes, len(bw))
	prevT := make([]engine.Time, len(bw))
	var changed []int32
	var before []LinkFigures
	for round := 0; round < 12; round++ {
		for i := 0; i <= round%3; i++ {
			f.Start(routes[(round*5+i*3)%len(routes)], units.Bytes(1e6*(1+round%4)), nil, 0)
		}
		e.Run()
		pending := make([]bool, len(bw))
		for l := range bw {
			pending[l] = f.Pending(l)
		}
		changed, before = f.Changed(changed[:0], before[:0])
		if len(before) != len(changed) {
			t.Fatalf("round %d: %d links but %d figures", round, len(changed), len(before))
		}
		in := make([]int, len(bw))
		for j, l := range changed {
			in[l]++
			if want := (LinkFigures{Bytes: float64(prevB[l]), Busy: prevT[l]}); before[j] != want {
				t.Fatalf("round %d: link %d's figures before = %+v, want %+v", round, l, before[j], want)
			}
		}
		for l := range bw {
			if pending[l] != (in[l] > 0) {
				t.Fatalf("round %d: Pending(%d) = %v, but Changed listed it %d times", round, l, pending[l], in[l])
			}
			b, busy := f.LinkBytes(l), f.LinkBusy(l)
			if in[l] > 1 || (in[l] == 0 && (b != prevB[l] || busy != prevT[l])) {
				t.Fatalf("round %d: link %d listed %d times, bytes %v -> %v, busy %v -> %v",
					round, l, in[l], prevB[l], b, prevT[l], busy)
			}
			prevB[l], prevT[l] = b, busy
		}
	}
	if !slices.Contains(changed, 2) {
		t.Errorf("the zero-bandwidth link's open busy period is not tracked: %v", changed)
	}
}

// TestAnalyticRepeat: Repeat gives a link what playing the same transfers
// on it would have, by hand. Links 0, 1 and 2 each carried 1 MB, link 0 in
// 1 ms, links 1 and 2 in 2 ms (behind a 0.5 GB/s link); link 0 then
// carries 2 MB + 1 MB back to back (3 ms), and so does link 2. Repeating
// link 0's round on link 1 leaves it, like link 2, 4 MB and 2 + 3 = 5 ms
// busy.
func TestAnalyticRepeat(t *testing.T) {
	bw := []units.BytesPerSecond{gbps, gbps, gbps, gbps / 2, gbps / 2}
	e := engine.New()
	f := New(e, bw, make([]engine.Time, len(bw)), Analytic)
	f.TrackChanges()
	for _, r := range [][]int32{{0}, {1, 3}, {2, 4}} {
		f.Start(r, 1e6, nil, 0)
	}
	e.Run()
	f.Changed(nil, nil)
	before := f.LinkBusy(0)
	for _, size := range []units.Bytes{2e6, 1e6} {
		f.Start([]int32{0}, size, nil, 0)
		f.Start([]int32{2}, size, nil, 0)
		e.Run()
	}
	f.Changed(nil, nil)
	f.Repeat(1, 0, before)
	got, figs := f.Changed(nil, nil)
	if !slices.Equal(got, []int32{1}) {
		t.Errorf("Changed after Repeat = %v, want [1]", got)
	}
	if want := []LinkFigures{{Bytes: 1e6, Busy: 2 * engine.Millisecond}}; !slices.Equal(figs, want) {
		t.Errorf("figures before Repeat = %+v, want %+v", figs, want)
	}
	for _, l := range []int{1, 2} {
		if b, busy := f.LinkBytes(l), f.LinkBusy(l); b != 4e6 || busy != 5*engine.Millisecond {
			t.Errorf("link %d: %v B, %v busy; want 4e6 B, 5 ms", l, b, busy)
		}
	}
}

// TestAnalyticFoldChanged: on two fabrics given the same rounds of
// transfers, FoldChanged hands over the links Changed lists, in its order,
// with the same figures before and LinkBytes/LinkBusy now (a link held open
// over a zero-bandwidth link included, and kept listed after); Listed shows
// that list without clearing it, so a round listed mid-way (after its first
// transfers) is handed over once, with its figures before the round.
func TestAnalyticFoldChanged(t *testing.T) {
	bw := []units.BytesPerSecond{gbps, 2 * gbps, 0, gbps, 4 * gbps, gbps}
	lat := make([]engine.Time, len(bw))
	ea, eb := engine.New(), engine.New()
	fa, fb := New(ea, bw, lat, Analytic), New(eb, bw, lat, Analytic)
	fa.TrackChanges()
	fb.TrackChanges()
	routes := [][]int32{{0, 1}, {3}, {1, 4, 5}, {2, 3}, {4}, {0, 5}}
	type handed struct {
		l           int32
		before, now LinkFigures
	}
	var changed []int32
	var before []LinkFigures
	for round := 0; round < 12; round++ {
		start := func(f *Fabric, i int) {
			f.Start(routes[(round*5+i*3)%len(routes)], units.Bytes(1e6*(1+round%4)), nil, 0)
		}
		// fa: the round's first transfer, Changed, the others, Changed.
		start(fa, 0)
		ea.Run()
		changed, before = fa.Changed(changed[:0], before[:0])
		first := map[int32]LinkFigures{}
		for j, l := range changed {
			first[l] = before[j]
		}
		for i := 1; i <= round%3; i++ {
			start(fa, i)
		}
		ea.Run()
		changed, before = fa.Changed(changed, before)
		var want []handed
		seen := map[int32]bool{}
		for j, l := range changed {
			if seen[l] {
				continue
			}
			seen[l] = true
			want = append(want, handed{l, before[j], LinkFigures{Bytes: float64(fa.LinkBytes(int(l))), Busy: fa.LinkBusy(int(l))}})
		}
		// fb: the same transfers, Listed after the first, one FoldChanged.
		start(fb, 0)
		eb.Run()
		ls, figs := fb.Listed()
		for j, l := range ls {
			if p, ok := first[l]; !ok || p != figs[j] || !fb.Pending(int(l)) {
				t.Fatalf("round %d: Listed link %d %+v (pending %v), Changed had %+v (%v)", round, l, figs[j], fb.Pending(int(l)), p, ok)
			}
		}
		if len(ls) != len(first) {
			t.Fatalf("round %d: Listed %d links, Changed %d", round, len(ls), len(first))
		}
		for i := 1; i <= round%3; i++ {
			start(fb, i)
		}
		eb.Run()
		var got []handed
		fb.FoldChanged(func(l int32, before, now LinkFigures) { got = append(got, handed{l, before, now}) })
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: FoldChanged handed %+v, want %+v", round, got, want)
		}
		for l := range bw {
			if fa.Pending(l) != fb.Pending(l) {
				t.Fatalf("round %d: link %d pending %v after FoldChanged, %v after Changed", round, l, fb.Pending(l), fa.Pending(l))
			}
		}
	}
	if !fb.Pending(2) {
		t.Error("the zero-bandwidth link's open busy period is not kept listed")
	}
}

// TestFlinkIsTwoCacheLines: the per-link record of flow fidelity is 128
// bytes, its first 64 the fields of departures, arrivals and alone
// (flow.go).
func TestFlinkIsTwoCacheLines(t *testing.T) {
	if s := unsafe.Sizeof(flink{}); s != 128 {
		t.Errorf("flink is %d bytes, want 128", s)
	}
	if o := unsafe.Offsetof(flink{}.rem); o != 64 {
		t.Errorf("flink's second cache line starts at byte %d, want 64", o)
	}
}
