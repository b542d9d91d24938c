package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func TestRegistry(t *testing.T) {
	want := []string{"gpipe", "1f1b", "interleaved", "zero-bubble", "dualpipe", "dualpipe-v"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		s, err := Lookup(n)
		if err != nil || s.Name() != n {
			t.Fatalf("Lookup(%q) = %v, %v", n, s, err)
		}
	}
	_, err := Lookup("2f2b")
	if err == nil || err.Error() != `parallel.schedule: unknown schedule "2f2b" (valid: gpipe, 1f1b, interleaved, zero-bubble, dualpipe, dualpipe-v)` {
		t.Fatalf("Lookup(2f2b): %v", err)
	}
	if Of(nil) != OneFOneB {
		t.Fatal("the default schedule is 1F1B")
	}
}

// shapes returns the shapes a schedule accepts among a grid of pipelines.
func shapes(s Schedule) []Shape {
	var out []Shape
	for _, pv := range [][2]int{{1, 1}, {2, 1}, {4, 1}, {4, 2}, {8, 1}, {8, 3}, {6, 1}} {
		p, v := pv[0], pv[1]
		for _, m := range []int{p, 2 * p, 3 * p, 4 * p, 4*p + 2} {
			sh := Shape{Stages: p, Microbatches: m, Virtual: v}
			if s.Check(sh) == nil {
				out = append(out, sh)
			}
		}
	}
	return out
}

// TestOrders checks every schedule's order on every stage: each micro-batch
// that a chunk slot carries (its placement route's micro-batches) is run
// forward once, then backward once (whole, or input then weights), and
// every slot of one route carries the same micro-batches.
func TestOrders(t *testing.T) {
	for _, s := range []Schedule{GPipe, OneFOneB, Interleaved, ZeroBubble, DualPipe, DualPipeV} {
		for _, sh := range shapes(s) {
			pl := s.Placement(sh)
			carried := map[[2]int][]int{} // (route, k) → micro-batches, sorted
			for st := 0; st < sh.Stages; st++ {
				name := fmt.Sprintf("%s p%d v%d m%d stage %d", s.Name(), sh.Stages, sh.Virtual, sh.Microbatches, st)
				f, bwd, w := map[[2]int]int{}, map[[2]int]Phase{}, map[[2]int]bool{}
				for i, x := range s.Order(sh, st) {
					k := [2]int{x.Microbatch, x.Chunk}
					if x.Chunk < 0 || x.Chunk >= pl.Chunks || x.Microbatch < 0 || x.Microbatch >= sh.Microbatches {
						t.Fatalf("%s: step %d %+v out of range", name, i, x)
					}
					switch x.Phase {
					case PhaseF:
						if _, ok := f[k]; ok {
							t.Fatalf("%s: second forward of %v", name, k)
						}
						f[k] = i
						if x.Overlap {
							if nx := s.Order(sh, st)[i+1]; nx.Phase != PhaseB {
								t.Fatalf("%s: overlapped forward %v followed by %v", name, k, nx)
							}
						}
					case PhaseB, PhaseI:
						if _, ok := f[k]; !ok {
							t.Fatalf("%s: backward before forward of %v", name, k)
						}
						if _, ok := bwd[k]; ok {
							t.Fatalf("%s: second backward of %v", name, k)
						}
						bwd[k] = x.Phase
					case PhaseW:
						if bwd[k] != PhaseI || w[k] {
							t.Fatalf("%s: weight pass of %v without one input-only backward before it", name, k)
						}
						w[k] = true
					}
				}
				for k := range f {
					if _, ok := bwd[k]; !ok {
						t.Fatalf("%s: %v never runs backward", name, k)
					}
					if bwd[k] == PhaseI && !w[k] {
						t.Fatalf("%s: %v never runs its weight pass", name, k)
					}
					r, mk := pl.ModelChunk(st, k[1])
					carried[[2]int{r, mk}] = append(carried[[2]int{r, mk}], k[0])
				}
			}
			// Every slot of a route carries the same micro-batches; the
			// routes split them.
			all := map[int]int{}
			for r := 0; r < pl.Routes; r++ {
				first := carried[[2]int{r, 0}]
				slices.Sort(first)
				for k := 0; k < pl.ModelChunks(); k++ {
					got := carried[[2]int{r, k}]
					slices.Sort(got)
					if !slices.Equal(got, first) {
						t.Fatalf("%s p%d m%d: route %d model chunk %d carries %v, chunk 0 %v", s.Name(), sh.Stages, sh.Microbatches, r, k, got, first)
					}
				}
				for _, mb := range first {
					all[mb]++
				}
			}
			if len(all) != sh.Microbatches {
				t.Fatalf("%s p%d m%d: %d micro-batches carried", s.Name(), sh.Stages, sh.Microbatches, len(all))
			}
			for mb, n := range all {
				if n != 1 {
					t.Fatalf("%s: micro-batch %d on %d routes", s.Name(), mb, n)
				}
			}
		}
	}
}

// TestInFlightClosedForms holds each schedule's memory closed form to its
// source: 1 without pipelining; all m for GPipe; p − stage for 1F1B and
// ZB-H1 (Korthikanti et al. 2022 §4.2.3), capped at m; interleaved 1F1B
// × (1 + (p−1)/(p·v)); DualPipe's p + 1 chunk-micro-batches (DeepSeek-V3
// Table 2) of a stage's two chunks; DualPipeV's 2p + 1 of 2p chunks.
func TestInFlightClosedForms(t *testing.T) {
	for _, c := range []struct {
		s               Schedule
		pp, stage, m, v int
		want            float64
	}{
		{OneFOneB, 1, 0, 8, 1, 1},
		{OneFOneB, 4, 0, 8, 1, 4},
		{OneFOneB, 4, 3, 8, 1, 1},
		{OneFOneB, 4, 0, 2, 1, 2}, // fewer micro-batches than stages
		{ZeroBubble, 4, 1, 8, 1, 3},
		{GPipe, 4, 2, 8, 1, 8},
		{Interleaved, 4, 0, 8, 2, 4 * (1 + 3.0/8)}, // p·(1 + (p−1)/(p·v)) = 5.5
		{Interleaved, 16, 0, 64, 8, 16 * (1 + 15.0/128)},
		{OneFOneB, 4, 0, 0, 1, 4},
		{DualPipe, 8, 0, 32, 1, 4.5},
		{DualPipe, 8, 5, 32, 1, 4.5},
		{DualPipe, 16, 7, 120, 1, 8.5},
		{DualPipeV, 4, 0, 8, 1, 4.5},
		{DualPipeV, 4, 3, 8, 1, 4.5},
	} {
		if got := c.s.InFlight(Shape{c.pp, c.m, c.v}, c.stage); got != c.want {
			t.Errorf("%s p=%d stage=%d m=%d v=%d: %v, want %v", c.s.Name(), c.pp, c.stage, c.m, c.v, got, c.want)
		}
	}
}

// TestInFlightMatchesOrder: the closed form the memory model uses is the
// peak the order itself holds (counted in chunk-micro-batches, so the
// closed form times the stage's chunks), on every stage; for interleaved
// 1F1B, whose closed form is Korthikanti et al.'s peak, on the first stage,
// which holds the most, with v > 1 chunks and enough micro-batches to fill
// its warm-up ((v+1)p − 1 ≤ m·v; with fewer the order holds every
// micro-batch and the closed form overstates it; with v = 1 the order's
// warm-up of 2(p−1) holds 2p − 1 where the closed form says p).
func TestInFlightMatchesOrder(t *testing.T) {
	for _, s := range []Schedule{GPipe, OneFOneB, Interleaved, ZeroBubble, DualPipe, DualPipeV} {
		for _, sh := range shapes(s) {
			chunks := s.Placement(sh).Chunks
			for st := 0; st < sh.Stages; st++ {
				if s == Interleaved && (st > 0 || sh.Virtual < 2 || (sh.Virtual+1)*sh.Stages-1 > sh.Microbatches*sh.Virtual) {
					continue
				}
				peak := Peak(s.Order(sh, st))
				if sh.Stages == 1 {
					continue // no pipeline: the closed form is one micro-batch at a time
				}
				if got := s.InFlight(sh, st) * float64(chunks); got != float64(peak) {
					t.Errorf("%s p%d v%d m%d stage %d: closed form %v chunk-micro-batches, order peaks at %d",
						s.Name(), sh.Stages, sh.Virtual, sh.Microbatches, st, got, peak)
				}
			}
		}
	}
}

// TestDualPipeTable2Activations: DeepSeek-V3's Table 2 gives DualPipe p + 1
// chunk-micro-batches of activations against 1F1B's p, on every stage.
func TestDualPipeTable2Activations(t *testing.T) {
	for _, p := range []int{2, 4, 8, 16} {
		sh := Shape{Stages: p, Microbatches: 4 * p}
		for st := 0; st < p; st++ {
			if got := Peak(DualPipe.Order(sh, st)); got != p+1 {
				t.Errorf("dualpipe p%d stage %d: %d chunk-micro-batches in flight, Table 2 says %d", p, st, got, p+1)
			}
		}
		if got := Peak(OneFOneB.Order(sh, 0)); got != p {
			t.Errorf("1f1b p%d: %d in flight on the first stage, want %d", p, got, p)
		}
	}
}

func TestChecks(t *testing.T) {
	for _, c := range []struct {
		s    Schedule
		sh   Shape
		want string // "" = accepted
	}{
		{OneFOneB, Shape{4, 8, 1}, ""},
		{OneFOneB, Shape{4, 8, 2}, "parallel.virtual_stages: 2 needs parallel.schedule: interleaved (have 1f1b)"},
		{Interleaved, Shape{1, 8, 2}, "parallel.schedule: interleaved needs pp >= 2"},
		{Interleaved, Shape{4, 6, 2}, "training.global_batch: the interleaved schedule needs micro-batches per pipeline (6 = global_batch/(dp*micro_batch)) to be a multiple of pp 4"},
		{Interleaved, Shape{4, 0, 2}, ""}, // micro-batches not known yet
		{DualPipe, Shape{8, 16, 1}, ""},
		{DualPipe, Shape{6, 12, 1}, ""},
		{DualPipe, Shape{5, 20, 1}, "parallel.pp: dualpipe needs an even pp >= 2 (have 5"},
		{DualPipe, Shape{8, 14, 1}, "training.global_batch: dualpipe needs an even number of micro-batches per pipeline, at least 2*pp = 16 (have 14"},
		{DualPipe, Shape{8, 17, 1}, "training.global_batch: dualpipe needs an even number"},
		{DualPipe, Shape{8, 16, 2}, "parallel.virtual_stages: 2 needs parallel.schedule: interleaved (have dualpipe)"},
		{DualPipeV, Shape{5, 10, 1}, ""},
		{DualPipeV, Shape{1, 10, 1}, "parallel.pp: dualpipe-v needs pp >= 2"},
		{DualPipeV, Shape{5, 9, 1}, "training.global_batch: dualpipe-v needs at least 2*pp = 10"},
	} {
		err := c.s.Check(c.sh)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %+v: %v", c.s.Name(), c.sh, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s %+v: %v, want %q…", c.s.Name(), c.sh, err, c.want)
		}
	}
}

func TestPlacements(t *testing.T) {
	// Megatron interleaving, p 4 v 2: model chunk k on stage k mod 4.
	il := Interleaving(4, 2)
	if l := il.Locate(0, 5); l != (Loc{1, 1}) {
		t.Errorf("interleaving: model chunk 5 at %v", l)
	}
	if n, ok := il.Next(3, 0); !ok || n != (Loc{0, 1}) {
		t.Errorf("interleaving: after stage 3 chunk 0 comes %v %v", n, ok)
	}
	if _, ok := il.Prev(0, 0); ok || !il.First(0, 0) || !il.Last(3, 1) {
		t.Error("interleaving: first/last model chunks")
	}
	// V: stage 0 holds the first and the last model chunk, the last
	// stage's two chunks are consecutive.
	v := VShape(4)
	if !v.First(0, 0) || !v.Last(0, 1) || v.StageSplit {
		t.Error("V: stage 0 holds model chunks 0 and 7")
	}
	if n, ok := v.Next(3, 0); !ok || n != (Loc{3, 1}) {
		t.Errorf("V: after stage 3 chunk 0 comes %v", n)
	}
	if r, k := v.ModelChunk(1, 1); r != 0 || k != 6 {
		t.Errorf("V: stage 1 chunk 1 holds model chunk %d of route %d, want 6 of 0", k, r)
	}
	// Bidirectional: two copies, stage s holds chunk s of copy 0 and chunk
	// p−1−s of copy 1; both end stages hold a first and a last chunk.
	bi := Bidirectional(4)
	if bi.ModelChunks() != 4 || bi.Routes != 2 {
		t.Fatalf("bidirectional: %d model chunks, %d routes", bi.ModelChunks(), bi.Routes)
	}
	if r, k := bi.ModelChunk(1, 1); r != 1 || k != 2 {
		t.Errorf("bidirectional: stage 1 slot 1 holds model chunk %d of copy %d, want 2 of 1", k, r)
	}
	if !bi.First(0, 0) || !bi.Last(0, 1) || !bi.First(3, 1) || !bi.Last(3, 0) {
		t.Error("bidirectional: end stages hold a first and a last chunk each")
	}
	if n, ok := bi.Next(2, 1); !ok || n != (Loc{1, 1}) {
		t.Errorf("bidirectional: copy 1 runs from stage 2 to %v", n)
	}
	if _, err := NewPlacement(2, 2, 1, false, func(_, k int) Loc { return Loc{0, k % 2} }); err == nil {
		t.Error("NewPlacement accepted a slot taken twice")
	}
}

// TestOneFOneBOrderExactRoom: a 1F1B order holds m forwards and m
// backwards, a zero-bubble one also m weight passes, each in exactly the
// room it was made with (the orders are kept per stage for a sweep's
// points, so unused room is kept garbage).
func TestOneFOneBOrderExactRoom(t *testing.T) {
	for _, splitW := range []bool{false, true} {
		for p := 1; p <= 9; p++ {
			for m := 1; m <= 17; m++ {
				for stage := 0; stage < p; stage++ {
					o := oneFOneBOrder(Shape{Stages: p, Microbatches: m, Virtual: 1}, stage, splitW)
					count := map[Phase]int{}
					for _, st := range o {
						count[st.Phase]++
					}
					want := map[Phase]int{PhaseF: m, PhaseB: m}
					if splitW {
						want = map[Phase]int{PhaseF: m, PhaseI: m, PhaseW: m}
					}
					if fmt.Sprint(count) != fmt.Sprint(want) || cap(o) != len(o) {
						t.Fatalf("p=%d m=%d stage %d splitW=%v: phases %v (want %v), len %d cap %d", p, m, stage, splitW, count, want, len(o), cap(o))
					}
				}
			}
		}
	}
}

// TestOneFOneBOrdersShared: stages and pipelines with the same micro-batch
// count and warm-up length get one shared order, equal to a freshly built
// one, and the split-W and plain orders are kept apart.
func TestOneFOneBOrdersShared(t *testing.T) {
	for _, splitW := range []bool{false, true} {
		for p := 1; p <= 8; p++ {
			for m := 1; m <= 12; m++ {
				for stage := 0; stage < p; stage++ {
					warm := min(p-stage-1, m)
					want := buildOneFOneBOrder(m, warm, splitW)
					got := oneFOneBOrder(Shape{Stages: p, Microbatches: m, Virtual: 1}, stage, splitW)
					if !slices.Equal(got, want) {
						t.Fatalf("p=%d m=%d stage %d splitW=%v: %v, want %v", p, m, stage, splitW, got, want)
					}
					// The same warm-up on a pipeline one stage longer.
					again := oneFOneBOrder(Shape{Stages: p + 1, Microbatches: m, Virtual: 1}, stage+1, splitW)
					if len(again) == 0 || &again[0] != &got[0] {
						t.Fatalf("p=%d m=%d stage %d splitW=%v: the order is not shared", p, m, stage, splitW)
					}
				}
			}
		}
	}
}

// TestSharedRoomCarvesDisjoint: sharedRoom hands out room of exactly the
// asked capacity, empty, never overlapping room handed out before (within
// a block and across blocks, a request larger than a block included), so
// that no shared order can write into another.
func TestSharedRoomCarvesDisjoint(t *testing.T) {
	type span struct{ lo, hi uintptr }
	var got []span
	const size = unsafe.Sizeof(Step{})
	for _, n := range []int{1, 7, roomBlock - 3, 5, roomBlock + 9, 2, roomBlock, 1} {
		r := sharedRoom(n)
		if len(r) != 0 || cap(r) != n {
			t.Fatalf("sharedRoom(%d): len %d cap %d, want 0 and %d", n, len(r), cap(r), n)
		}
		r = r[:n]
		for i := range r {
			r[i] = Step{Phase: PhaseW, Microbatch: n, Chunk: i}
		}
		lo := uintptr(unsafe.Pointer(&r[0]))
		s := span{lo, lo + uintptr(n)*size}
		for _, o := range got {
			if s.lo < o.hi && o.lo < s.hi {
				t.Fatalf("sharedRoom(%d) at [%#x, %#x) overlaps earlier room [%#x, %#x)", n, s.lo, s.hi, o.lo, o.hi)
			}
		}
		got = append(got, s)
	}
}
