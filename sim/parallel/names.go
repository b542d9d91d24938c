package parallel

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// TaskName is a task's name (Task.Name) as an index into the process's
// table of task names, so that a Task holds no pointer: the builder stores
// millions of tasks a sweep, and a string field made every store pass the
// garbage collector's write barrier and every task array a span the
// collector scans. String returns the name; two TaskNames are equal exactly
// when their names are. The index itself is not stable (it depends on the
// order names were first seen, across goroutines): compare, never order or
// print it. The zero TaskName is the empty name.
//
// The table holds each distinct name once and only grows: names are the
// builder's fixed names and a model's op names with fixed suffixes, a few
// hundred in all.
type TaskName uint32

// String returns the name ("" for an index no name was given: only the
// builder makes TaskNames).
func (n TaskName) String() string {
	if list := *taskNames.list.Load(); int64(n) < int64(len(list)) {
		return list[n]
	}
	return ""
}

// taskNames is the process's name table: list, read without a lock, is
// replaced by a longer copy (under mu) when a name is added, so that a
// reader always sees a complete table holding every name it was given.
var taskNames = func() *nameTable {
	t := &nameTable{ids: map[string]TaskName{"": 0}}
	list := []string{""}
	t.list.Store(&list)
	return t
}()

type nameTable struct {
	mu   sync.Mutex
	ids  map[string]TaskName
	list atomic.Pointer[[]string]
}

// internName returns s's TaskName, adding s to the table if new.
func internName(s string) TaskName {
	t := taskNames
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.ids[s]; ok {
		return n
	}
	old := *t.list.Load()
	list := make([]string, len(old)+1)
	copy(list, old)
	n := TaskName(len(old))
	list[n] = s
	t.ids[s] = n
	t.list.Store(&list)
	return n
}

// nameCache is one goroutine's view of the name table (a builder's, kept
// in its Arena): names it has seen, found without the table's lock. Most
// names the builder passes are string literals, whose bytes stay where
// they are, so slots indexed by the address of a name's bytes answer
// them without hashing the name (a map lookup per task was ≈ 4% of a
// sweep's CPU); a slot holds its string, so an equal address and length
// mean equal bytes. A name may sit in either slot of its pair, so that
// two names of one address hash (a layer's attention and MLP, say) do not
// take turns. Names built at run time (a collective's name with a suffix)
// miss the slots and are found in ids.
type nameCache struct {
	slots [nameSlots]nameSlot
	ids   map[string]TaskName
}

const (
	nameSlotBits = 8
	nameSlots    = 1 << nameSlotBits
)

type nameSlot struct {
	s string
	n TaskName
}

// of returns s's TaskName; a nil cache asks the table.
func (c *nameCache) of(s string) TaskName {
	if c == nil {
		return internName(s)
	}
	p := unsafe.StringData(s)
	h := (uint64(uintptr(unsafe.Pointer(p))) * 0x9E3779B97F4A7C15) >> (64 - nameSlotBits)
	e, f := &c.slots[h], &c.slots[h^1]
	if unsafe.StringData(e.s) == p && len(e.s) == len(s) {
		return e.n // the zero slot answers "" (nil bytes) with 0, which is right
	}
	if unsafe.StringData(f.s) == p && len(f.s) == len(s) {
		return f.n
	}
	n, ok := c.ids[s]
	if !ok {
		if c.ids == nil {
			c.ids = make(map[string]TaskName, 128)
		}
		n = internName(s)
		c.ids[s] = n
	}
	if e.s != "" && f.s == "" {
		e = f
	}
	*e = nameSlot{s, n}
	return n
}

// sendGradID is the name of a pipeline send of a gradient (matchSends
// tells the two directions' sends apart by it).
var sendGradID = internName(sendGradName)
