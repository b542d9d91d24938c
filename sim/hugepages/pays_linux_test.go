package hugepages

import (
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// hugePays keeps huge pages wherever one of its two facts is missing or
// speaks for them, and turns them away only where the host takes back
// free blocks and a populated page's first touch is cheap.
func TestHugePays(t *testing.T) {
	dear := int64(touchProbePages * dearTouchNs)
	for _, c := range []struct {
		name      string
		reporting bool
		touchNs   int64
		want      bool
	}{
		{"no reporting, cheap touch (bare metal)", false, 400, true},
		{"no reporting, dear touch", false, 90_000, true},
		{"reporting, touch not measured", true, -1, true},
		{"reporting, dear touch (shadow paging)", true, 90_000, true},
		{"reporting, touch at the threshold", true, dear, true},
		{"reporting, touch just under it", true, dear - 1, false},
		{"reporting, cheap touch", true, 400, false},
		{"reporting, touch after an idle spell", true, touchProbePages * 270, false},
	} {
		if got := hugePays(c.reporting, c.touchNs); got != c.want {
			t.Errorf("%s: hugePays(%v, %d) = %v, want %v", c.name, c.reporting, c.touchNs, got, c.want)
		}
	}
}

// reportingOrder reads page_reporting_order as the kernel prints it: an
// order once a reporting device has registered, −1 printed unsigned before.
func TestReportingOrder(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"9\n", true},
		{"0\n", true},
		{"10", true},
		{"4294967295\n", false},
		{"-1\n", false},
		{"", false},
		{"nine\n", false},
	} {
		if got := reportingOrder([]byte(c.text)); got != c.want {
			t.Errorf("reportingOrder(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

// firstTouchNs measures where the system populates pages, and says so
// where it cannot (−1). No figure is asserted: it is a time.
func TestFirstTouchMeasures(t *testing.T) {
	ns := firstTouchNs()
	if Populating() && ns < 0 {
		t.Fatalf("firstTouchNs() = %d on a system that populates pages", ns)
	}
	if !Populating() && ns != -1 {
		t.Fatalf("firstTouchNs() = %d where populating is refused, want -1", ns)
	}
	t.Logf("first touch of %d populated pages: %d ns; host reclaims free blocks: %v", touchProbePages, ns, hostReclaims())
}

// closeUnless closes an open gate where huge pages do not pay, and then
// withdraws the advice given (turnOff), leaves it open where they do,
// and asks nothing once it is closed.
func TestCloseUnless(t *testing.T) {
	skipWithoutHugeAdvice(t)
	openGate(t)
	const huge = 2 << 20
	mem := unmappedAnon(t, 4*huge)
	base := uintptr(unsafe.Pointer(&mem[0]))
	block := mem[int((huge-base%huge)%huge):][:huge]
	hg := func() bool {
		return slices.Contains(strings.Fields(vmFlags(t, uintptr(unsafe.Pointer(&block[0])))), "hg")
	}
	closeUnless(func() bool { return true })
	if !hugeWanted() {
		t.Fatal("gate closed where huge pages pay")
	}
	Advise(mem) // (Advise leaves slices under two blocks alone)
	if !hg() {
		t.Fatal("open gate: the block not advised huge")
	}
	closeUnless(func() bool { return false })
	if hugeWanted() {
		t.Fatal("gate open where huge pages do not pay")
	}
	if hg() {
		t.Error("closed gate: the advice given before not withdrawn")
	}
	asked := false
	closeUnless(func() bool { asked = true; return false })
	if asked {
		t.Error("pays asked with the gate closed already")
	}
}
