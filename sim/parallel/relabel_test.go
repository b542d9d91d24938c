package parallel

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestMoveFromMatchesPlain holds moveFrom, two indices a word, to the
// plain loop: lengths 0 to 41 (every tail of the runs of four) and some
// long ones, θ at 0, inside the values, above them all and at 2³¹ − 1,
// moves of 0 to the most that keeps every value an index, the values
// at both ends of their range, in place and into another slice; and a
// lane's compare must not leak into its neighbour (a value just below θ
// beside one at θ).
func TestMoveFromMatchesPlain(t *testing.T) {
	plain := func(src []int32, theta, P int32) []int32 {
		out := make([]int32, len(src))
		for i, v := range src {
			if v >= theta {
				v += P
			}
			out[i] = v
		}
		return out
	}
	rng := rand.New(rand.NewSource(27))
	lengths := []int{1000, 4093, 65536 + 3}
	for n := range 42 {
		lengths = append(lengths, n)
	}
	const top = math.MaxInt32
	checks := 0
	for _, n := range lengths {
		for _, span := range []int32{8, 1 << 16, top / 2, top} {
			src := make([]int32, n)
			for i := range src {
				src[i] = rng.Int31n(span)
			}
			if n > 2 {
				src[0], src[1] = 0, span-1
			}
			hi := int32(0)
			for _, v := range src {
				hi = max(hi, v)
			}
			for _, theta := range []int32{0, span / 2, span/2 + 1, span, top} {
				for _, P := range []int32{0, 1, 7, (top - hi) / 2, top - hi} {
					want := plain(src, theta, P)
					dst := make([]int32, n)
					moveFrom(dst, src, theta, P)
					if !slices.Equal(dst, want) {
						t.Fatalf("n %d span %d θ %d P %d: %v, want %v", n, span, theta, P, dst[:min(n, 12)], want[:min(n, 12)])
					}
					in := slices.Clone(src)
					moveFrom(in, in, theta, P)
					if !slices.Equal(in, want) {
						t.Fatalf("n %d span %d θ %d P %d in place: %v, want %v", n, span, theta, P, in[:min(n, 12)], want[:min(n, 12)])
					}
					checks++
				}
			}
		}
	}
	// neighbours across θ in both lanes of a word, both words of a run
	for _, theta := range []int32{1, 100, top - 1} {
		src := []int32{theta - 1, theta, theta, theta - 1, theta - 1, theta - 1, theta, theta, 0}
		dst := make([]int32, len(src))
		moveFrom(dst, src, theta, 1)
		if want := plain(src, theta, 1); !slices.Equal(dst, want) {
			t.Fatalf("θ %d: %v, want %v", theta, dst, want)
		}
	}
	// a destination view that starts at an odd index (unaligned words)
	buf := make([]int32, 103)
	src := buf[:50]
	for i := range src {
		src[i] = int32(i * 3)
	}
	moveFrom(buf[51:101], src, 60, 1000)
	if want := plain(src, 60, 1000); !slices.Equal(buf[51:101], want) {
		t.Fatalf("unaligned: %v, want %v", buf[51:101], want)
	}
	if checks < 1000 {
		t.Fatalf("%d checks", checks)
	}
}

// TestShiftByMatchesPlain holds shiftBy to the plain loop: every tail
// length, shifts of 0 up to the most that keeps the values below 2³¹, and
// negative shifts (one at a time), from odd offsets of one buffer.
func TestShiftByMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	const top = math.MaxInt32
	for n := range 45 {
		for _, span := range []int32{4, 1 << 20, top} {
			src := make([]int32, n)
			for i := range src {
				src[i] = rng.Int31n(span)
			}
			hi, lo := int32(0), int32(top)
			for _, v := range src {
				hi, lo = max(hi, v), min(lo, v)
			}
			for _, s := range []int32{0, 1, 13, (top - hi) / 3, top - hi, -lo, -lo / 2} {
				want := make([]int32, n)
				for i, v := range src {
					want[i] = v + s
				}
				buf := make([]int32, 2*n+3)
				dst := buf[n+1 : 2*n+1]
				copy(buf[1:n+1], src)
				shiftBy(dst, buf[1:n+1], s)
				if !slices.Equal(dst, want) {
					t.Fatalf("n %d shift %d: %v, want %v", n, s, dst, want)
				}
			}
		}
	}
}

// TestBumpMicroMatchesPlain holds bumpMicro, two tasks an iteration, to
// the plain loop on every length up to 9 and an odd long one: tasks of no
// micro-batch (negative Micro) keep theirs, the others move by one, and
// no other field changes.
func TestBumpMicroMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1001} {
		tasks := make([]Task, n)
		for i := range tasks {
			tasks[i] = Task{Micro: int32(rng.Intn(8)) - 2, Layer: int32(i), Name: TaskName(i), Step: int16(i)}
		}
		want := slices.Clone(tasks)
		for i := range want {
			if want[i].Micro >= 0 {
				want[i].Micro++
			}
		}
		bumpMicro(tasks)
		if !slices.Equal(tasks, want) {
			t.Fatalf("n %d: %+v, want %+v", n, tasks[:min(n, 4)], want[:min(n, 4)])
		}
	}
}

// layerState and setLayerState read and write the indices stateInts points
// to, in its order: every index set to its own value through the pointers
// reads back in place, and values set by setLayerState read back through
// them.
func TestLayerStateMatchesStateInts(t *testing.T) {
	b, p := &builder{}, &chunkPass{}
	for i, f := range b.stateInts(p) {
		*f = int32(100 + i)
	}
	s := b.layerState(p)
	for i := range s {
		if s[i] != int32(100+i) {
			t.Fatalf("index %d: layerState %d, through stateInts %d", i, s[i], 100+i)
		}
	}
	var w [layerStateInts]int32
	for i := range w {
		w[i] = int32(7*i - 3)
	}
	b.setLayerState(p, &w)
	for i, f := range b.stateInts(p) {
		if *f != w[i] {
			t.Fatalf("index %d: set %d, reads %d through stateInts", i, w[i], *f)
		}
	}
}
