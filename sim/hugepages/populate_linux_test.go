package hugepages

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of b that mincore reports in memory.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+4095)/4096)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// unmappedAnon returns n bytes of private anonymous memory with no page
// mapped (unmapped again when t ends), or skips t on a kernel without
// MADV_POPULATE_WRITE.
func unmappedAnon(t *testing.T, n int) []byte {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	lo := uintptr(unsafe.Pointer(&mem[0]))
	uncover(lo, lo+uintptr(n)) // a fresh mapping holds no advice, as Map records
	if err := unix.Madvise(mem[:4096], unix.MADV_POPULATE_WRITE); err != nil {
		t.Skipf("kernel without MADV_POPULATE_WRITE (Linux < 5.14): %v", err)
	}
	if err := unix.Madvise(mem, unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	return mem
}

// Populate maps exactly the whole pages inside its slice, without a write,
// and leaves the contents as they were; pages outside it stay unmapped.
func TestPopulateMapsWholePagesInside(t *testing.T) {
	const page, pages = 4096, 64
	mem := unmappedAnon(t, pages*page)
	if got := resident(t, mem); got != 0 {
		t.Fatalf("%d pages resident before Populate, want 0", got)
	}
	mem[5*page+7] = 42 // one page written, so mapped, before
	// int64s from the middle of page 2 to the middle of page 40: whole
	// pages 3..39 are populated, pages 2 and 40 only if written.
	s := unsafe.Slice((*int64)(unsafe.Pointer(&mem[2*page+2048])), (38*page)/8)
	if got := Populate(s); unsafe.SliceData(got) != unsafe.SliceData(s) || len(got) != len(s) {
		t.Fatal("Populate returned another slice")
	}
	if got, want := resident(t, mem), 37; got != want {
		t.Errorf("%d pages resident after Populate, want %d (pages 3..39)", got, want)
	}
	if got := resident(t, mem[2*page:3*page]) + resident(t, mem[40*page:41*page]); got != 0 {
		t.Errorf("a page Populate shares with its neighbours was mapped")
	}
	for i, v := range mem {
		if want := byte(0); i == 5*page+7 && v != 42 || i != 5*page+7 && v != want {
			t.Fatalf("byte %d = %d after Populate", i, v)
		}
	}
}

// Small slices, under two pages, are left alone.
func TestPopulateLeavesSmallSlices(t *testing.T) {
	const page = 4096
	mem, err := unix.Mmap(-1, 0, 4*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer unix.Munmap(mem)
	Populate(mem[:2*page-1])
	Populate(mem[:0])
	if got := resident(t, mem); got != 0 {
		t.Fatalf("%d pages resident after Populate of small slices, want 0", got)
	}
}

// PopulateUpTo maps the whole pages inside its slice, one page and more,
// and says where they end, as an offset into the slice; nothing for a
// slice holding no whole page.
func TestPopulateUpToSaysWhereMappedPagesEnd(t *testing.T) {
	const page = 4096
	if PageSize() != page {
		t.Skipf("page size %d", PageSize())
	}
	mem := unmappedAnon(t, 16*page)
	for _, tc := range []struct {
		name     string
		from, to int // bytes of mem
		want     int // the offset returned
		resident int // pages resident after, in all
	}{
		{"inside one page: nothing", 100, 4000, 0, 0},
		{"one whole page", page, 2 * page, page, 1},
		{"from inside a page to inside another", 2*page + 10, 4*page + 10, 2*page - 10, 2},
		{"two pages and a part", 6 * page, 8*page + 5, 2 * page, 4},
	} {
		if got := PopulateUpTo(mem[tc.from:tc.to]); got != tc.want {
			t.Errorf("%s: returned %d, want %d", tc.name, got, tc.want)
		}
		if got := resident(t, mem); got != tc.resident {
			t.Errorf("%s: %d pages resident, want %d", tc.name, got, tc.resident)
		}
	}
}

// vmFlags returns the VmFlags of the mapping holding address a in
// /proc/self/smaps ("" when none holds it).
func vmFlags(t *testing.T, a uintptr) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(a) >= l && uint64(a) < h
				continue
			}
		}
		if in && f[0] == "VmFlags:" {
			return strings.Join(f[1:], " ")
		}
	}
	return ""
}

// Populate advises huge pages over exactly the 2 MiB blocks its slice
// reaches (not the blocks beside them), and leaves every byte as it was,
// a neighbour's written byte in the same block included.
func TestPopulateAdvisesHugePagesAround(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skipf("no transparent huge pages: %v", err)
	}
	openGate(t)
	const page, huge = 4096, 2 << 20
	mem := unmappedAnon(t, 5*huge)
	if err := unix.Madvise(mem[:page], unix.MADV_HUGEPAGE); err != nil {
		t.Skipf("huge-page advice refused here: %v", err)
	}
	if err := unix.Madvise(mem[:page], unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	base := uintptr(unsafe.Pointer(&mem[0]))
	off := int((huge - base%huge) % huge) // mem[off:] starts a 2 MiB block
	block := mem[off+huge : off+2*huge]   // the block the slice lies in
	block[0] = 7                          // a neighbour's byte, written before
	s := block[2*page : 5*page]
	Populate(s)
	hg := func(b []byte) bool {
		return slices.Contains(strings.Fields(vmFlags(t, uintptr(unsafe.Pointer(&b[0])))), "hg")
	}
	if !hg(block) || !hg(block[huge-page:]) {
		t.Errorf("the block Populate's slice lies in is not advised huge (VmFlags %q)", vmFlags(t, uintptr(unsafe.Pointer(&block[0]))))
	}
	if hg(mem[off:]) || hg(mem[off+2*huge:]) {
		t.Errorf("a block beside the slice's was advised huge")
	}
	if got := resident(t, s); got != 3 {
		t.Errorf("%d of the slice's 3 pages resident after Populate", got)
	}
	for i, v := range mem {
		if want := byte(0); i == off+huge && v != 7 || i != off+huge && v != want {
			t.Fatalf("byte %d = %d after Populate", i, v)
		}
	}
}
