package hugepages

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// AdviseHeap advises a range of at least n-4 MiB (the block's 2 MiB-aligned
// interior) without making it resident, once per process; small requests
// do nothing. The advice is checked where the kernel records it: the
// mapping's VmFlags in /proc/self/smaps carry "hg" (MADV_HUGEPAGE). It runs
// in a process of its own (this test binary again), whose heap is as fresh
// as a command's when it calls AdviseHeap: in this one, other tests may
// have written pages the block would reuse.
func TestAdviseHeap(t *testing.T) {
	if os.Getenv("SIMTRAIN_ADVISEHEAP_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdviseHeap$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SIMTRAIN_ADVISEHEAP_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	if lo, hi := AdviseHeap(2<<20 - 1); lo != 0 || hi != 0 {
		t.Fatalf("AdviseHeap(under 4 MiB) advised [%#x, %#x), want nothing", lo, hi)
	}
	const n = 64 << 20
	before := residentKB(t)
	lo, hi := AdviseHeap(n)
	after := residentKB(t)
	if hi-lo < n-2*huge || lo%huge != 0 || hi%huge != 0 {
		t.Fatalf("AdviseHeap(%d) advised [%#x, %#x): %d bytes, want >= %d, 2 MiB-aligned", n, lo, hi, hi-lo, n-2*huge)
	}
	if grew := after - before; grew > n/1024/4 {
		t.Errorf("resident memory grew by %d KB over AdviseHeap(%d MiB): the block was touched", grew, n>>20)
	}
	flags := vmFlags(t, lo, hi)
	if flags == nil {
		t.Fatalf("no mapping covers [%#x, %#x) in /proc/self/smaps", lo, hi)
	}
	for _, f := range flags {
		if !strings.Contains(" "+f+" ", " hg ") {
			t.Errorf("a mapping in [%#x, %#x) lacks the huge-page advice: VmFlags %q", lo, hi, f)
		}
	}
	if lo2, hi2 := AdviseHeap(n); lo2 != 0 || hi2 != 0 {
		t.Errorf("a second AdviseHeap advised [%#x, %#x), want nothing (first call only)", lo2, hi2)
	}
}

// residentKB is the process's VmRSS.
func residentKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// vmFlags returns the VmFlags lines of the mappings that overlap [lo, hi).
func vmFlags(t *testing.T, lo, hi uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		var a, b uintptr
		if _, err := fmt.Sscanf(l, "%x-%x ", &a, &b); err == nil && strings.Contains(l[:strings.IndexByte(l, ' ')], "-") {
			in = a < hi && b > lo
			continue
		}
		if rest, ok := strings.CutPrefix(l, "VmFlags:"); ok && in {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
