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

// moveFrom sets dst[i] to src[i] + P where src[i] ≥ theta, else to
// src[i], for i below len(src) (dst must be as long; the two may be the
// same slice but must not overlap otherwise). Every src[i] must lie in
// [0, 2³¹), theta in [0, 2³¹] and every moved value below 2³¹ (task
// indices): then it equals the plain loop (TestMoveFromMatchesPlain).
func moveFrom(dst, src []int32, theta, P int32) {
	dst = dst[:len(src)]
	k := 0
	if wordLoadsUnaligned && len(src) >= 4 {
		// x | laneTops − θθ is x + (laneTops − θθ): x's lanes have their
		// top bits clear, and no lane of laneTops − θθ borrows (θ ≤ 2³¹).
		k = len(src) &^ 3
		moveQuads(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), uintptr(k)*4,
			laneTops-uint64(uint32(theta))*laneOnes, laneOnesVar, uint64(uint32(P)))
	}
	for ; k < len(src); k++ {
		if v := src[k]; v >= theta {
			dst[k] = v + P
		} else {
			dst[k] = v
		}
	}
}

// moveQuads is moveFrom's loop over the runs of four int32s in the first
// n bytes at d and s (n a multiple of 16; both hold n bytes), given c =
// laneTops − θθ, ones = laneOnes and P: two 64-bit words, four indices,
// an iteration. The words are read and written at 4-byte boundaries
// (wordLoadsUnaligned); a uint64 holds no pointer, so the views need no
// alignment beyond the int32s' (checkptr allows them). A call of its own,
// its arguments opaque to the compiler: inlined, it folded c back into
// two constants and spilled the word (≈ 15 instructions a word,
// cachegrind, against ≈ 8 here). It takes pointers and a byte count, not
// two [][2]uint64 views, which cost moveFrom ≈ 20 instructions a call to
// make and pass (build28).
//
//go:noinline
func moveQuads(d, s unsafe.Pointer, n uintptr, c, ones, pp uint64) {
	// Eight indices an iteration, then the four left when n/16 is odd:
	// the loop's own three instructions over twice the work (≈ 3 M of
	// the 70B sweep's ≈ 30 M here, cachegrind).
	i := uintptr(0)
	for ; i+32 <= n; i += 32 {
		x, y := *(*uint64)(unsafe.Add(s, i)), *(*uint64)(unsafe.Add(s, i+8))
		z, w := *(*uint64)(unsafe.Add(s, i+16)), *(*uint64)(unsafe.Add(s, i+24))
		*(*uint64)(unsafe.Add(d, i)) = x + ((x+c)>>31&ones)*pp
		*(*uint64)(unsafe.Add(d, i+8)) = y + ((y+c)>>31&ones)*pp
		*(*uint64)(unsafe.Add(d, i+16)) = z + ((z+c)>>31&ones)*pp
		*(*uint64)(unsafe.Add(d, i+24)) = w + ((w+c)>>31&ones)*pp
	}
	if i < n {
		x, y := *(*uint64)(unsafe.Add(s, i)), *(*uint64)(unsafe.Add(s, i+8))
		*(*uint64)(unsafe.Add(d, i)) = x + ((x+c)>>31&ones)*pp
		*(*uint64)(unsafe.Add(d, i+8)) = y + ((y+c)>>31&ones)*pp
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
	if wordLoadsUnaligned && shift >= 0 && len(src) >= 4 {
		k = len(src) &^ 3
		shiftQuads(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), uintptr(k)*4, uint64(uint32(shift))*laneOnes)
	}
	for ; k < len(src); k++ {
		dst[k] = src[k] + shift
	}
}

// shiftQuads is shiftBy's loop over the runs of four int32s in the first
// n bytes at d and s (n a multiple of 16), given both lanes' shift
// (moveQuads says why a call of its own, and why through pointers).
//
//go:noinline
func shiftQuads(d, s unsafe.Pointer, n uintptr, sh uint64) {
	for i := uintptr(0); i < n; i += 16 {
		x, y := *(*uint64)(unsafe.Add(s, i)), *(*uint64)(unsafe.Add(s, i+8))
		*(*uint64)(unsafe.Add(d, i)), *(*uint64)(unsafe.Add(d, i+8)) = x+sh, y+sh
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
		// A byte offset walks the pairs (as moveQuads' loop): indexing
		// the pairs cost two more instructions a pair, the index times
		// the pair's 96 bytes (≈ 2.5 M on the 70B sweep, cachegrind).
		p := unsafe.Pointer(unsafe.SliceData(tasks))
		n := uintptr(len(tasks)/2) * unsafe.Sizeof([2]Task{})
		for off := uintptr(0); off < n; off += unsafe.Sizeof([2]Task{}) {
			pair := (*[2]Task)(unsafe.Add(p, off))
			if m := pair[0].Micro; m >= 0 {
				pair[0].Micro = m + 1
			}
			if m := pair[1].Micro; m >= 0 {
				pair[1].Micro = m + 1
			}
		}
	}
	if len(tasks)&1 != 0 {
		if t := &tasks[len(tasks)-1]; t.Micro >= 0 {
			t.Micro++
		}
	}
}
