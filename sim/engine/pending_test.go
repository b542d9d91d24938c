package engine

import (
	"slices"
	"testing"
)

// pendRec records the (time, argument) of each event it handles.
type pendRec struct{ got [][2]int64 }

func (r *pendRec) Handle(now Time, arg int64) { r.got = append(r.got, [2]int64{int64(now), arg}) }

// TestReplaceKeepsOrder: AppendPending lists the pending events in run
// order, and Replace with some moved later keeps, at equal times, the
// order in which they were first scheduled (their sequence numbers),
// whatever the queue held them in (few events, or enough to bucket).
func TestReplaceKeepsOrder(t *testing.T) {
	for _, n := range []int{5, 300, 2000} {
		e := New()
		var a, b pendRec
		ha, hb := e.Register(&a), e.Register(&b)
		e.At(1, ha, -1)
		e.Run() // now = 1
		for i := range n {
			h := ha
			if i%3 == 0 {
				h = hb
			}
			e.At(Time(10+i%7), h, int64(i))
		}
		e.At(1, hb, -2) // a zero-delay event at now
		evs := e.AppendPending(nil)
		if len(evs) != n+1 || evs[0].Arg != -2 {
			t.Fatalf("n=%d: %d events listed, first %d", n, len(evs), evs[0].Arg)
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].At < evs[i-1].At {
				t.Fatalf("n=%d: listed out of time order", n)
			}
		}
		// Move a's events 3 later, among b's, which stay.
		var want [][2]int64
		for i := range evs {
			if evs[i].Handler == ha {
				evs[i].At += 3
			}
		}
		sorted := slices.Clone(evs)
		slices.SortFunc(sorted, func(x, y PendingEvent) int {
			if x.At != y.At {
				return int(x.At - y.At)
			}
			return int(x.key>>handlerBits) - int(y.key>>handlerBits)
		})
		for _, ev := range sorted {
			want = append(want, [2]int64{int64(ev.At), ev.Arg})
		}
		e.Replace(evs)
		if e.Pending() != n+1 {
			t.Fatalf("n=%d: %d pending after Replace", n, e.Pending())
		}
		a.got, b.got = nil, nil
		var all [][2]int64
		e.SetAfterEvent(func(now Time) {
			if len(a.got) > 0 {
				all = append(all, a.got[0])
				a.got = a.got[:0]
			}
			if len(b.got) > 0 {
				all = append(all, b.got[0])
				b.got = b.got[:0]
			}
		})
		e.Run()
		if !slices.Equal(all, want) {
			t.Errorf("n=%d: ran %v…, want %v…", n, all[:min(6, len(all))], want[:min(6, len(want))])
		}
	}
}

// TestAddExecuted: the count of executed events takes the derived ones.
func TestAddExecuted(t *testing.T) {
	e := New()
	e.AddExecuted(7)
	if e.Executed() != 7 {
		t.Fatalf("Executed %d, want 7", e.Executed())
	}
}
