package parallel

import (
	"encoding/binary"
	"hash"
	"unsafe"
)

// HashPrograms writes to h what the builder decided of progs: each
// program's stage, whether its host thread is modelled, its tasks (every
// field, as their bytes) and their dependencies. The rest of a Program
// (launch queues, bands, successors, the p2p and entry lists) is derived
// from these and from the StepConfig's other fields by Build's finishing
// pass, so two builds from configurations equal but for what only the
// builder reads that write the same bytes here make programs that play
// alike (sim/simulation's twin plays, issue 18).
//
// A task name is its index in this process's name table (TaskName), so
// the bytes compare builds made in one process only.
func HashPrograms(h hash.Hash, progs []*Program) {
	var head [40]byte
	binary.LittleEndian.PutUint64(head[0:], uint64(len(progs)))
	h.Write(head[:8])
	for _, p := range progs {
		hosted := uint64(0)
		if p.Hosted {
			hosted = 1
		}
		binary.LittleEndian.PutUint64(head[0:], uint64(p.Stage))
		binary.LittleEndian.PutUint64(head[8:], hosted)
		binary.LittleEndian.PutUint64(head[16:], uint64(len(p.Tasks)))
		binary.LittleEndian.PutUint64(head[24:], uint64(len(p.depOff)))
		binary.LittleEndian.PutUint64(head[32:], uint64(len(p.deps)))
		h.Write(head[:])
		h.Write(sliceBytes(p.Tasks))
		h.Write(sliceBytes(p.depOff))
		h.Write(sliceBytes(p.deps))
	}
}

// sliceBytes is s's elements as bytes (nil for an empty s). For Task this
// is every field and nothing else: its fields leave no padding between
// them (TestTaskHasNoPadding), so equal bytes are equal fields.
func sliceBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}
