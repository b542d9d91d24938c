package parallel

import (
	"runtime"
	"unsafe"
)

// Copied ranges' index lists relabelled two indices at a time (issue 18,
// build27). A copied pass's dependencies are its source's, each moved by P
// when it is θ or later (copyPass), and its dependency offsets are its
// source's shifted by where its dependencies start; one compare, one
// conditional move and the loop's own four instructions an index cost
// ≈ 9 instructions a dependency on the 70B sweep (cachegrind). Task
// indices are non-negative int32s, so two of them fit one 64-bit word with
// each lane's top bit clear: the compare is a subtraction of θ from the
// lanes with their top bits set (a lane's top bit survives exactly when it
// is θ or more, and no lane borrows from the next), and the moves are that
// bit times P, added lane by lane (no lane carries into the next, the
// results being indices too). The lanes are independent, so the byte order
// does not matter.

const (
	laneTops = 0x80000000_80000000 // each 32-bit lane's top bit
	laneOnes = 0x00000001_00000001 // each 32-bit lane's bit 0
)

// laneOnesVar is laneOnes read from memory: passed as a constant, the
// compiler loaded the 64-bit immediate again on every iteration of
// moveQuads' loop and spilled the word to the stack; a variable's value
// stays in a register.
var laneOnesVar uint64 = laneOnes

// wordLoadsUnaligned says the target loads a 64-bit word from any 4-byte
// boundary at full speed (amd64, arm64). Elsewhere (riscv64 and mips64
// trap or emulate a misaligned load) quads returns no words and the
// callers' per-index tails do all the work.
const wordLoadsUnaligned = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"

// quads is s's first len(s)/4 runs of four int32s, each as two 64-bit
// words (the same memory: no copy), or nothing where the target cannot
// load a word from a 4-byte boundary (wordLoadsUnaligned). A uint64 holds
// no pointer, so the view needs no alignment beyond the int32s' (checkptr
// allows it).
func quads(s []int32) [][2]uint64 {
	if !wordLoadsUnaligned || len(s) < 4 {
		return nil
	}
	return unsafe.Slice((*[2]uint64)(unsafe.Pointer(unsafe.SliceData(s))), len(s)/4)
}

// quadsEnd is how many of n int32s quads covers: where the per-index
// tails start.
func quadsEnd(n int) int {
	if !wordLoadsUnaligned {
		return 0
	}
	return n &^ 3
}

// moveFrom sets dst[i] to src[i] + P where src[i] ≥ theta, else to
// src[i], for i below len(src) (dst must be as long; the two may be the
// same slice but must not overlap otherwise). Every src[i] must lie in
// [0, 2³¹), theta in [0, 2³¹] and every moved value below 2³¹ (task
// indices): then it equals the plain loop (TestMoveFromMatchesPlain).
func moveFrom(dst, src []int32, theta, P int32) {
	dst = dst[:len(src)]
	// x | laneTops − θθ is x + (laneTops − θθ): x's lanes have their top
	// bits clear, and no lane of laneTops − θθ borrows (θ ≤ 2³¹).
	moveQuads(quads(dst), quads(src), laneTops-uint64(uint32(theta))*laneOnes, laneOnesVar, uint64(uint32(P)))
	for k := quadsEnd(len(src)); k < len(src); k++ {
		if v := src[k]; v >= theta {
			dst[k] = v + P
		} else {
			dst[k] = v
		}
	}
}

// moveQuads is moveFrom's loop over the runs of four, given c = laneTops −
// θθ, ones = laneOnes and P: two words, four indices, an iteration. A
// call of its own, its arguments opaque to the compiler: inlined, it
// folded c back into two constants and spilled the word (≈ 15
// instructions a word, cachegrind, against ≈ 8 here).
//
//go:noinline
func moveQuads(dw, sw [][2]uint64, c, ones, pp uint64) {
	dw = dw[:len(sw)]
	for i := range sw {
		x, y := sw[i][0], sw[i][1]
		dw[i][0], dw[i][1] = x+((x+c)>>31&ones)*pp, y+((y+c)>>31&ones)*pp
	}
}

// shiftBy sets dst[i] to src[i] + shift for i below len(src) (dst must be
// as long; the two must not overlap unless they are the same slice).
// With shift ≥ 0 and every src[i] and result in [0, 2³¹) (dependency
// offsets, which only grow) it adds both lanes of a word at once (no
// lane carries into the next); otherwise it adds one at a time. Either
// way it equals the plain loop (TestShiftByMatchesPlain).
func shiftBy(dst, src []int32, shift int32) {
	dst = dst[:len(src)]
	k := 0
	if shift >= 0 {
		shiftQuads(quads(dst), quads(src), uint64(uint32(shift))*laneOnes)
		k = quadsEnd(len(src))
	}
	for ; k < len(src); k++ {
		dst[k] = src[k] + shift
	}
}

// shiftQuads is shiftBy's loop over the runs of four, given both lanes'
// shift (moveQuads says why a call of its own).
//
//go:noinline
func shiftQuads(dw, sw [][2]uint64, sh uint64) {
	dw = dw[:len(sw)]
	for i := range sw {
		dw[i][0], dw[i][1] = sw[i][0]+sh, sw[i][1]+sh
	}
}

// bumpMicro moves every task's Micro that names a micro-batch (≥ 0) on by
// one (copyPass, a copy of a checked copy): two tasks an iteration (a
// Task holds no pointer: the pairs are a view of the same memory), ≈ 7.5
// instructions a task against ≈ 11 one at a time.
//
//go:noinline
func bumpMicro(tasks []Task) {
	if len(tasks) >= 2 {
		pairs := unsafe.Slice((*[2]Task)(unsafe.Pointer(unsafe.SliceData(tasks))), len(tasks)/2)
		for i := range pairs {
			if m := pairs[i][0].Micro; m >= 0 {
				pairs[i][0].Micro = m + 1
			}
			if m := pairs[i][1].Micro; m >= 0 {
				pairs[i][1].Micro = m + 1
			}
		}
	}
	if len(tasks)&1 != 0 {
		if t := &tasks[len(tasks)-1]; t.Micro >= 0 {
			t.Micro++
		}
	}
}
