package simulation

import (
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

// tinyScenario is a model so small that its kernels take less GPU time
// than the host needs to issue them (hidden 128, 128 tokens per
// micro-batch), on 8 GPUs.
const tinyScenario = `
name: tiny
model:
  layers: 4
  hidden: 128
  heads: 2
  ffn: 512
  vocab: 1024
training:
  seq_len: 128
  global_batch: 16
  micro_batch: 1
cluster:
  gpu: h100-sxm
  nodes: 1
parallel:
  dp: 8
`

func runTiny(t *testing.T, kv ...string) *Result {
	t.Helper()
	s, err := scenario.Parse([]byte(tinyScenario), scenario.Overrides(kv...)...)
	if err != nil {
		t.Fatal(err)
	}
	return mustRun(t, s, Options{})
}

// TestHostThreadOutputs: a tiny model is host-bound (the compute stream
// waits for the host thread: host_bound_s > 0, within the thread's busy
// time), every rank's timeline has a host track whose rows never overlap,
// fewer than the tasks (Result.Check, run by mustRun, holds each task to
// start after its issue), playing every rank gives the same
// figures, and whole-iteration CUDA graphs take the host off the step, as
// training.host_dispatch: graphs does; auto is the unset field (same run
// id), and an unknown class is a one-line error naming the choices.
func TestHostThreadOutputs(t *testing.T) {
	r := runTiny(t)
	if r.HostIssueS <= 0 || r.HostBoundS <= 0 || r.HostBoundS > r.HostIssueS || r.HostBoundS > r.StepTimeS {
		t.Fatalf("host busy %g s, GPU waits %g s, step %g s: want a host-bound step", r.HostIssueS, r.HostBoundS, r.StepTimeS)
	}
	if r.Scenario.HostDispatchClass() != "eager" {
		t.Errorf("dispatch class %q, want eager", r.Scenario.HostDispatchClass())
	}
	var lastEnd int64 = -1
	hostRows, tasks, lastRank := 0, 0, -1
	r.Tasks([]int{0, 1}, func(tr TaskRecord) {
		if tr.Rank != lastRank {
			lastEnd, lastRank = -1, tr.Rank
		}
		if tr.Stream != "host" {
			tasks++
			return
		}
		hostRows++
		if tr.Kind != "host_issue" || tr.StartNs < lastEnd || tr.EndNs <= tr.StartNs {
			t.Fatalf("host row %+v after an issue ending at %d", tr, lastEnd)
		}
		lastEnd = tr.EndNs
	})
	if hostRows == 0 || hostRows >= tasks {
		t.Fatalf("%d host rows for %d tasks: want a host track of one row per layer pass", hostRows, tasks)
	}
	all := mustRun(t, r.Scenario, Options{AllRanks: true})
	if all.StepTimeS != r.StepTimeS || all.HostBoundS != r.HostBoundS || all.HostIssueS != r.HostIssueS {
		t.Errorf("all ranks: step %g host %g/%g, representatives: %g %g/%g", all.StepTimeS, all.HostIssueS, all.HostBoundS,
			r.StepTimeS, r.HostIssueS, r.HostBoundS)
	}
	g := runTiny(t, "training.cuda_graphs", "full")
	if g.HostIssueS != 0 || g.HostBoundS != 0 || !(g.StepTimeS < r.StepTimeS) {
		t.Errorf("cuda graphs: host %g/%g s, step %g s (eager %g s): want no host time and a faster step", g.HostIssueS, g.HostBoundS, g.StepTimeS, r.StepTimeS)
	}
	h := runTiny(t, "training.host_dispatch", "graphs")
	if h.HostIssueS != 0 || !(h.StepTimeS < r.StepTimeS) {
		t.Errorf("host_dispatch graphs: host %g s, step %g s (eager %g s)", h.HostIssueS, h.StepTimeS, r.StepTimeS)
	}
	if a := runTiny(t, "training.host_dispatch", "auto"); a.RunID != r.RunID || a.StepTimeS != r.StepTimeS {
		t.Errorf("host_dispatch auto: run id %s step %g, unset: %s %g", a.RunID, a.StepTimeS, r.RunID, r.StepTimeS)
	}
	if _, err := scenario.Parse([]byte(tinyScenario), scenario.Overrides("training.host_dispatch", "jax")...); err == nil ||
		err.Error() != `training.host_dispatch: unknown value "jax" (valid: auto, eager, graphs)` {
		t.Errorf("host_dispatch jax: %v", err)
	}
}
