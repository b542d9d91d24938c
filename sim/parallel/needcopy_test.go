package parallel

import (
	"reflect"
	"testing"
)

// TestFillNeedCopiedMatchesPlain: NewSymmetric's input counts of a
// program with bulk copies (fillNeedCopied: the copies' counts taken from
// their sources', the tasks between them counted) equal the counts of
// every task counted on its own (fillNeed), with and without a host
// thread, for copy lists that have consecutive copies (nothing counted
// between them), gaps before, between and after them, a chain of copies
// each of the one before, a program that ends in a copy, and a list that
// is not a build's (the rest counted plainly). It fails if the counts of
// the tasks before a copy, or after the last, are skipped or shifted.
func TestFillNeedCopiedMatchesPlain(t *testing.T) {
	// (kinds and dependency counts of a source block; a copy repeats its
	// source's)
	base := []struct {
		kind Kind
		deps int32
	}{
		{KindForward, 1}, {KindRecv, 1}, {KindForward, 2}, {KindBackward, 0},
		{KindWGrad, 3}, {KindRecv, 0}, {KindForward, 1},
	}
	for _, c := range []struct {
		name   string
		n      int       // tasks
		copies []copySeg // at, src, n
	}{
		{"none", 7, nil},
		{"consecutive", 21, []copySeg{{7, 0, 7}, {14, 7, 7}}},
		{"gaps", 26, []copySeg{{8, 0, 7}, {16, 2, 5}}},
		{"gap of two", 26, []copySeg{{8, 0, 7}, {17, 2, 5}}},
		{"ends in a copy", 14, []copySeg{{7, 0, 7}}},
		{"chain", 35, []copySeg{{7, 0, 7}, {14, 7, 7}, {21, 14, 7}, {28, 21, 7}}},
		{"first at zero gap", 16, []copySeg{{9, 1, 3}, {12, 9, 3}}},
		{"not a build's", 20, []copySeg{{7, 0, 7}, {5, 0, 2}, {14, 0, 3}}},
		// runs of copies that continue one another (copyBack)
		{"long chain", 70, []copySeg{{7, 0, 7}, {14, 7, 7}, {21, 14, 7}, {28, 21, 7}, {35, 28, 7}, {42, 35, 7}, {49, 42, 7}, {56, 49, 7}, {63, 56, 7}}},
		{"chain of unequal copies", 28, []copySeg{{7, 0, 7}, {14, 7, 4}, {18, 11, 3}, {21, 14, 7}}},
		{"one run from far back", 28, []copySeg{{14, 0, 7}, {21, 7, 7}}},
		{"distance changes", 28, []copySeg{{7, 0, 7}, {14, 0, 7}, {21, 7, 7}}},
		{"run then gap then run", 40, []copySeg{{7, 0, 7}, {14, 7, 7}, {23, 2, 5}, {28, 7, 5}}},
	} {
		for _, hosted := range []bool{false, true} {
			p := &Program{Hosted: hosted}
			p.Tasks = make([]Task, c.n)
			cnt := make([]int32, c.n)
			for i := range p.Tasks { // a pattern no copy repeats by chance
				b := base[(i*5+3)%len(base)]
				p.Tasks[i].Kind, cnt[i] = b.kind, b.deps
			}
			applyCopies(p, cnt, c.copies)
			hot := make([]hotTask, c.n)
			fillHotTasks(hot, p.Tasks)
			got := make([]int32, c.n)
			for i := range got {
				got[i] = -7 // (a count left unwritten shows)
			}
			fillNeedCopied(got, hot, p)
			if want := fillNeed(make([]int32, c.n), p); !reflect.DeepEqual(got, want) {
				t.Errorf("%s hosted %v: need %v, want %v", c.name, hosted, got, want)
			}
		}
	}
}

// applyCopies makes p's tasks from len(cnt) on a build's copy list: each
// copy's tasks take their source's kind and dependency count (cnt), up to
// the first copy a build would not make (overlapping, out of range or
// copying forward), after which the tasks stay as they are; it sets
// p.copies and the dependency offsets (p.depOff) from the counts.
func applyCopies(p *Program, cnt []int32, copies []copySeg) {
	n := int32(len(cnt))
	end := int32(0)
	for _, s := range copies {
		if s.at < end || s.at+s.n > n || s.src+s.n > s.at {
			break // (not a build's: the rest are plain tasks)
		}
		end = s.at + s.n
		for k := int32(0); k < s.n; k++ {
			p.Tasks[s.at+k].Kind, cnt[s.at+k] = p.Tasks[s.src+k].Kind, cnt[s.src+k]
		}
	}
	p.copies = copies
	p.depOff = make([]int32, n+1)
	for i, d := range cnt {
		p.depOff[i+1] = p.depOff[i] + d
	}
}

// TestCopyBackMatchesElementwise: copyBack(v, a, d) sets v[a:] as the
// element-by-element copy from d back, in order (each element read may
// have been set by the copy itself), for runs shorter than d, equal to
// it, a few times it and not a multiple of it. It fails if a doubling
// block reads past the part already repeated, or stops short.
func TestCopyBackMatchesElementwise(t *testing.T) {
	for _, c := range []struct{ n, a, d int }{
		{10, 10, 3}, {10, 8, 3}, {10, 7, 3}, {12, 6, 6}, {40, 3, 3}, {41, 5, 2}, {9, 1, 1}, {100, 7, 7}, {30, 20, 9},
	} {
		got, want := make([]int32, c.n), make([]int32, c.n)
		for i := range got {
			got[i] = int32(i*7 + 1)
			want[i] = got[i]
		}
		for k := c.a; k < c.n; k++ {
			want[k] = want[k-c.d]
		}
		copyBack(got, c.a, c.d)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("n %d a %d d %d: %v, want %v", c.n, c.a, c.d, got, want)
		}
	}
}
