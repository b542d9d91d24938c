package simulation

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/scenario"
)

// soleFiles is TestSoleCollectivesExact's scenarios: every bundled one of
// up to 1,024 GPUs and every fourth validation and holdout run of up to
// 128 (with -short, the bundled ones of up to 256 GPUs), less the
// mixture-of-experts runs above 64 GPUs, whose expert all-to-alls share
// every scale-up port (nothing plays sole) and whose flow plays take tens
// of seconds. With SIMTRAIN_ALL_SCENARIOS set, every validation and
// holdout run of up to 256 GPUs too: 138 of them play a collective sole
// (332 s on the project's machine).
func soleFiles(t *testing.T) []string {
	all := os.Getenv("SIMTRAIN_ALL_SCENARIOS") != ""
	var files []string
	bundled, _ := filepath.Glob("../../scenarios/*.yaml")
	for _, f := range bundled {
		if soleFits(t, f, map[bool]int{false: 1024, true: 256}[testing.Short() && !all], all) {
			files = append(files, f)
		}
	}
	if testing.Short() && !all {
		return files
	}
	for _, pat := range []string{"../../scenarios/validation/*.yaml", "../../scenarios/holdout/*.yaml"} {
		m, _ := filepath.Glob(pat)
		for i, f := range m {
			if all && soleFits(t, f, 256, all) || i%4 == 0 && soleFits(t, f, 128, all) {
				files = append(files, f)
			}
		}
	}
	return files
}

// soleFits reports whether scenario file f is a cluster of at most most
// GPUs, and not a mixture-of-experts run above 64 GPUs unless all.
func soleFits(t *testing.T, f string, most int, all bool) bool {
	s, err := scenario.Load(f)
	if err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	return s.GPUs() <= most && (all || s.Model.MoE == nil || s.GPUs() <= 64)
}

// TestSoleCollectivesExact: at flow fidelity, playing the collectives of
// groups alone on their scale-up links as one timer each (soleGroups)
// changes nothing a run reports but its event count: every figure, every
// rank's task times and every link's bytes and busy time equal a play of
// every transfer on the fabric, on every bundled, validation and holdout
// scenario of soleFiles played at flow fidelity. The fabric
// checks that no flow joins a link a sole collective holds, and the
// executor that no group starts a sole collective before its last one
// ended (0 clashes, 0 overlaps), and some collectives must play sole.
func TestSoleCollectivesExact(t *testing.T) {
	var starts int64
	played := 0
	for _, f := range soleFiles(t) {
		s, err := scenario.Load(f, scenario.Overrides("sim.fidelity", "flow")...)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var n int64
		opt := Options{checkAlone: true, KeepRanks: keepSome, onSole: func(st int64, clashes, overlaps int) {
			n += st
			if clashes != 0 || overlaps != 0 {
				t.Errorf("%s: %d clashes on links held by sole collectives, %d overlapping sole collectives", filepath.Base(f), clashes, overlaps)
			}
		}}
		sole := runSole(t, s, opt)
		if n == 0 {
			continue // nothing played sole: the same play
		}
		starts += n
		played++
		whole := runSole(t, s, Options{noSole: true, KeepRanks: keepSome})
		sole.Events, whole.Events = 0, 0
		if !sameFigures(sole, whole) {
			t.Errorf("%s: sole %+v\ntransfers %+v", filepath.Base(f), resultFigures(sole), resultFigures(whole))
		}
		if a, b := playedTimes(sole), playedTimes(whole); a != b {
			t.Errorf("%s: the ranks' task times differ", filepath.Base(f))
		}
		ab, abusy := sole.LinkTraffic()
		bb, bbusy := whole.LinkTraffic()
		for l := range ab {
			if ab[l] != bb[l] || abusy[l] != bbusy[l] {
				t.Errorf("%s: link %d: %v bytes busy %d ns sole, %v bytes busy %d ns as transfers", filepath.Base(f), l, ab[l], abusy[l], bb[l], bbusy[l])
				break
			}
		}
	}
	t.Logf("%d scenarios played %d collectives sole", played, starts)
	if played == 0 {
		t.Fatal("no scenario played a collective sole")
	}
}

// runSole runs s for TestSoleCollectivesExact: not mustRun, whose
// invariant checks over every rank's kept times took minutes on GPT-3's
// 1,024 ranks at flow fidelity (they run elsewhere).
func runSole(t *testing.T, s *scenario.Plan, opt Options) *Result {
	t.Helper()
	r, err := Run(context.Background(), s, opt)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	return r
}

// keepSome keeps the task times of the first and last 16 ranks, and of
// every 37th.
func keepSome(r *Result) []int {
	var keep []int
	n := r.Cluster.NumGPUs()
	for i := range n {
		if i < 16 || i >= n-16 || i%37 == 0 {
			keep = append(keep, i)
		}
	}
	return keep
}

// playedTimes hashes every kept rank's task starts, ends and issues.
func playedTimes(r *Result) [32]byte {
	h := sha256.New()
	x := r.exec
	var start, end, issued []engine.Time
	var b [8]byte
	for i := 0; i < x.Instances(); i++ {
		if !x.HasTimes(i) {
			continue
		}
		start, end, issued = x.Times(i, start[:0], end[:0], issued[:0])
		for _, ts := range [][]engine.Time{start, end, issued} {
			for _, v := range ts {
				binary.LittleEndian.PutUint64(b[:], uint64(v))
				h.Write(b[:])
			}
		}
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
