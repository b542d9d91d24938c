package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestStructureKey: changes the builder does not branch on (the
// micro-batch size, the arena; tp and dp where the bucket cuts cannot
// move) leave the key; any it branches on — micro-batches, tp 1 against
// 2, sequence parallelism, the ZeRO stage, the schedule, bucket cuts that
// may move — change it.
func TestStructureKey(t *testing.T) {
	key := func(tp, dp int, edit func(*StepConfig)) (uint64, []*Program) {
		_, c := stepConfig(t, tp, dp, 2, 8, pipeline.OneFOneB)
		if edit != nil {
			edit(c)
		}
		k, ok := c.StructureKey()
		if !ok {
			t.Fatal("no key")
		}
		ps, err := Build(c, commPricer{unit: engine.Millisecond, comm: engine.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		return k, ps
	}
	// stepConfig's layers have 1e6 parameters, below the bucket
	// (max(40e6, 1e6·dp)): the cuts follow the per-GPU sums, keyed by
	// bucket·tp (paramSizes' rule 2). Rule 1: layers of 1e9 parameters
	// and a 2^20-token vocabulary put every increment in a bucket of its
	// own at any tp.
	big := func(c *StepConfig) {
		c.LayerParams = func(int) (float64, float64) { return 1e9, 0 }
		c.Model.Vocab = 1 << 20
	}
	for _, c := range []struct {
		name     string
		tp, dp   int
		edit     func(*StepConfig)
		tp2, dp2 int
		edit2    func(*StepConfig)
		same     bool
	}{
		{"micro-batch size", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Shape.MicroBatch = 4 }, true},
		{"arena", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Arena = new(Arena) }, true},
		{"bucket·tp 80e6 both (dp 4, dp 8: bucket 40e6)", 2, 4, nil, 2, 8, nil, true},
		{"bucket·tp 160e6 both (tp 2 dp 80, tp 4 dp 40)", 2, 80, nil, 4, 40, nil, true},
		{"bucket·tp 80e6 against 160e6", 2, 4, nil, 4, 2, nil, false},
		{"every increment its own bucket, tp 2 against 4", 2, 4, big, 4, 2, big, true},
		{"every increment its own bucket against accumulated ones", 2, 4, big, 2, 4, nil, false},
		{"micro-batches", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Microbatches = 9 }, false},
		{"tp 1 against 2", 2, 4, nil, 1, 8, nil, false},
		{"sp off", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Shape.SP = false }, false},
		{"zero 3", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Zero = 3 }, false},
		{"schedule", 2, 4, nil, 2, 4, func(c *StepConfig) { c.Schedule = pipeline.GPipe }, false},
		{"zero 3, all-gathers in calls, tp 2 against 4", 2, 4, func(c *StepConfig) { c.Zero, c.Zero3GatherParams = 3, 1e5 },
			4, 2, func(c *StepConfig) { c.Zero, c.Zero3GatherParams = 3, 1e5 }, false},
		{"zero 3, one call a unit, tp 2 against 4", 2, 4, func(c *StepConfig) { c.Zero = 3 }, 4, 2, func(c *StepConfig) { c.Zero = 3 }, true},
	} {
		k1, p1 := key(c.tp, c.dp, c.edit)
		k2, p2 := key(c.tp2, c.dp2, c.edit2)
		if got := k1 == k2; got != c.same {
			t.Errorf("%s: same key %v, want %v", c.name, got, c.same)
		}
		if k1 == k2 && !sameGraph(p1, p2) {
			t.Errorf("%s: one key, different task graphs", c.name)
		}
	}
}

// sameGraph reports whether a and b hold the same tasks but for their
// prices (Dur, GEMMShare, Bytes, FLOPs) and the same dependencies.
func sameGraph(a, b []*Program) bool {
	if len(a) != len(b) {
		return false
	}
	for s := range a {
		if len(a[s].Tasks) != len(b[s].Tasks) {
			return false
		}
		for i := range a[s].Tasks {
			x, y := a[s].Tasks[i], b[s].Tasks[i]
			x.Dur, x.GEMMShare, x.Bytes = y.Dur, y.GEMMShare, y.Bytes
			if x.Kind != KindSend && x.Kind != KindRecv {
				x.aux = y.aux // FLOPs; a send's or receive's peer and match stay compared
			}
			if x != y || !slices.Equal(a[s].Deps(i), b[s].Deps(i)) {
				return false
			}
		}
	}
	return true
}
