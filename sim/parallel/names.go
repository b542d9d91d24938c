package parallel

import (
	"sync"
	"sync/atomic"
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

// String returns the name.
func (n TaskName) String() string { return (*taskNames.list.Load())[n] }

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
// in its Arena): names it has seen, found without the table's lock.
type nameCache struct {
	ids map[string]TaskName
}

// of returns s's TaskName; a nil cache asks the table.
func (c *nameCache) of(s string) TaskName {
	if c == nil {
		return internName(s)
	}
	if n, ok := c.ids[s]; ok {
		return n
	}
	if c.ids == nil {
		c.ids = make(map[string]TaskName, 128)
	}
	n := internName(s)
	c.ids[s] = n
	return n
}

// sendGradID is the name of a pipeline send of a gradient (matchSends
// tells the two directions' sends apart by it).
var sendGradID = internName(sendGradName)
