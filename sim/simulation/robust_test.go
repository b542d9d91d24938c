package simulation

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/scenario"
)

// Issue 19: a huge model on one node overflowed int64 nanoseconds when a
// capped duration was added to the current time and the engine panicked
// ("event scheduled at -9.2e+09s"). Now Run returns ErrTimeOverflow naming
// what drives the step's length.
func TestRunTimeOverflowIsAnError(t *testing.T) {
	s, err := scenario.Parse([]byte(`name: huge
model: {layers: 4, hidden: 16777216, heads: 128, ffn: 16777216, vocab: 16777216}
training: {seq_len: 16777216, global_batch: 8, micro_batch: 1}
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
parallel: {zero: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), s, Options{})
	if !errors.Is(err, engine.ErrTimeOverflow) || !strings.Contains(err.Error(), "model.hidden 16777216") {
		t.Fatalf("got %v, want ErrTimeOverflow naming the fields", err)
	}
}

// cancelOnPoll is a context that reports cancellation from its n-th Err
// call on, as if Ctrl-C arrived during the run.
type cancelOnPoll struct {
	context.Context
	polls, after int64
}

func (c *cancelOnPoll) Err() error {
	if atomic.AddInt64(&c.polls, 1) > c.after {
		return context.Canceled
	}
	return nil
}

// Issue 19: Ctrl-C was ignored while the task graph was built. Run now
// polls its context while building (every 16,384 tasks) and playing: a
// cancellation during the build stops it there, long before the graph
// (about 1.3 million tasks here, some 200 MB) is complete.
func TestRunCancelStopsTheBuild(t *testing.T) {
	s := llama8bOnOneGPU(t, 64, 1024, 4096)
	if w := EstimateWork(s, Options{}); w.ProgramTasks < 1e6 {
		t.Fatalf("the scenario is too small to show anything: %d tasks", w.ProgramTasks)
	}
	ctx := &cancelOnPoll{Context: context.Background(), after: 1}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Run(ctx, s, Options{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 48<<20 {
		t.Errorf("allocated %d MB before stopping: the build went on after the cancellation", alloc>>20)
	}
}
