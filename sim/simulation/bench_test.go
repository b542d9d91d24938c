package simulation

import (
	"context"
	"fmt"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

// llama405B is the bundled 16,384-GPU Llama 3 405B scenario.
const llama405B = "../../scenarios/llama3-405b-16k-h100.yaml"

// load405B loads llama405B on gpus GPUs: the same model, layout per
// replica and micro-batches per replica, with data parallelism (and the
// global batch) scaled to fill the cluster.
func load405B(b *testing.B, gpus int) *scenario.Plan {
	b.Helper()
	dp := gpus / (8 * 16) // tp 8, pp 16
	s, err := scenario.Load(llama405B, scenario.Overrides(
		"cluster.nodes", fmt.Sprint(gpus/8), "parallel.dp", fmt.Sprint(dp),
		"training.global_batch", fmt.Sprint(16*dp))...)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkRun405B is the default mode of `simtrain run` on Llama 3 405B
// without writing files, at 16,384 and 131,072 GPUs: each iteration does
// what the command does after loading the scenario, simulation.Run with
// no Reuse (so it builds the cluster, 1.5 M links at 131,072 GPUs, as the
// command does once per scenario: its dense bandwidths, 13 of the ≈ 44 MB
// allocated per iteration at 131,072 GPUs, `go test -bench
// Build/llama3-clos-131072 -benchmem ./sim/topology` alone; the link
// records, latencies and devices are made only when read), the play (one
// rank per pipeline stage)
// and, as the command's default links.arrow policy does (sim.links: auto,
// report.AutoLinksMax), links.arrow's per-link traffic when the cluster
// has at most 2^18 links: at 16,384 GPUs (180,416 links), not at 131,072
// (1,443,168; BenchmarkLinks405B prices it there). Its cost should barely
// grow with the cluster (issue 18).
//
//	go test ./sim/simulation -run '^$' -bench 'Run405B|Links405B' -benchtime 3x
func BenchmarkRun405B(b *testing.B) {
	for _, gpus := range []int{16384, 131072} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			s := load405B(b, gpus)
			b.ReportAllocs()
			for b.Loop() {
				res, err := Run(context.Background(), s, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if res.Cluster.NumLinks() <= autoLinksMax {
					_, _ = res.LinkTraffic()
				}
			}
		})
	}
}

// autoLinksMax is report.AutoLinksMax's default (sim/report imports this
// package, so the benchmark states it again).
const autoLinksMax = 1 << 18

// BenchmarkLinks405B is links.arrow's traffic alone (Result.LinkTraffic:
// the analytic reconstruction of every link's bytes and busy time) for the
// 405B default run at 16,384 and 131,072 GPUs; the cluster and the run are
// built once, outside the timed loop.
func BenchmarkLinks405B(b *testing.B) {
	for _, gpus := range []int{16384, 131072} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			res, err := Run(context.Background(), load405B(b, gpus), Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_, _ = res.LinkTraffic()
			}
		})
	}
}

// BenchmarkAllRanks405B plays every one of the 16,384 ranks of the 405B
// scenario, keeping no rank's task times (`simtrain run --all-ranks
// --no-timeline` without writing files; like the command, each iteration
// builds the cluster too). One iteration takes seconds:
//
//	go test ./sim/simulation -run '^$' -bench AllRanks405B -benchtime 1x
func BenchmarkAllRanks405B(b *testing.B) {
	s := load405B(b, 16384)
	b.ReportAllocs()
	none := func(*Result) []int { return []int{} }
	for b.Loop() {
		if _, err := Run(context.Background(), s, Options{AllRanks: true, KeepRanks: none}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFlow is `simtrain run --fidelity flow --no-timeline` without
// writing files: every rank played, every transfer a max-min flow on the
// fabric (sim/network). Three cases: the bundled 70B scenario on 1,024
// GPUs, DeepSeek-V3 on 256 GB200 with a smaller batch (expert-parallel
// all-to-alls), and the 405B one cut to 2,048 GPUs (dp 16) in two pods of
// 1,024, so that its data-parallel rings cross the oversubscribed tier as
// at 16,384 GPUs (the 16,384-GPU flow run takes about a minute; README's
// performance table times it whole). It reports the max-min solves per run
// and the share of them that needed no re-solve.
//
//	go test ./sim/simulation -run '^$' -bench Flow -benchtime 3x
func BenchmarkFlow(b *testing.B) {
	for _, c := range []struct {
		name string
		load func(*testing.B) *scenario.Plan
	}{
		{"llama3-70b-1024", func(b *testing.B) *scenario.Plan {
			s, err := scenario.Load("../../scenarios/llama3-70b-1024-h100-3d.yaml", scenario.Overrides("sim.fidelity", "flow")...)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"deepseek-v3-256", func(b *testing.B) *scenario.Plan {
			// The bundled scenario with 4 micro-batches per replica
			// (global batch 256): its expert-parallel all-to-alls put
			// hundreds of flows on one link at an instant.
			s, err := scenario.Load("../../scenarios/deepseek-v3-256-gb200.yaml", scenario.Overrides(
				"training.global_batch", "256", "sim.fidelity", "flow")...)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"llama3-405b-2048", func(b *testing.B) *scenario.Plan {
			s, err := scenario.Load(llama405B, scenario.Overrides(
				"cluster.nodes", "256", "parallel.dp", "16",
				"training.global_batch", "256", "cluster.network.pod_gpus", "1024",
				"sim.fidelity", "flow")...)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := c.load(b)
			none := func(*Result) []int { return []int{} }
			b.ReportAllocs()
			var res *Result
			var sole int64
			count := func(starts int64, _, _ int) { sole = starts }
			for b.Loop() {
				var err error
				if res, err = Run(context.Background(), s, Options{KeepRanks: none, onSole: count}); err != nil {
					b.Fatal(err)
				}
			}
			// The solver's work per run: solves, the share of them that
			// touched no flow that stays (sim/network's alone), and the
			// local re-solves' rounds that left no flow frozen on their
			// links, so had nothing to check.
			st := res.fabric.Stats()
			b.ReportMetric(float64(st.Solves), "solves/op")
			b.ReportMetric(100*float64(st.Alone)/float64(st.Solves), "alone%")
			b.ReportMetric(float64(st.Unchecked), "unchecked/op")
			b.ReportMetric(float64(st.Fresh), "fresh/op")
			b.ReportMetric(float64(sole), "sole/op") // collectives played as one timer (soleGroups)
		})
	}
}
