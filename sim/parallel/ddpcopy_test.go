package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestDDPGradCopies: the copies PyTorch DDP's reducer makes with
// gradient_as_bucket_view off (StepConfig.DDPGradCopy), counted and sized
// by hand for two layers of P = 1e6 parameters and the tied embedding
// (32,000 × 1,024 = 32.768e6 parameters) over DP 4, zero 0, buckets of
// 1e6 parameters (one per layer, one for the embedding), at 10 B/ns:
//   - copy-in (mul_out into the bucket view): read and write G bytes per
//     parameter, on the compute stream after the layer's backward and
//     before its bucket's all-reduce: 2·2e6 = 4e6 B (400 µs) per layer in
//     bf16, 8e6 B (800 µs) in fp32; the embedding's 131.072e6 B in bf16;
//   - copy-out (copy_bucket_to_grad): read and write G per parameter of the
//     rank, once, after every all-reduce and before the optimizer:
//     2·2·34.768e6 = 139.072e6 B in bf16, 278.144e6 B in fp32;
//   - only the last micro-batch's gradients are copied (no_sync before);
//   - off, or with one DP rank, or ZeRO-1, there is none.
func TestDDPGradCopies(t *testing.T) {
	const P = 1e6
	const emb = 32000 * 1024.0
	for _, tc := range []struct {
		name      string
		copy      bool
		zero, dp  int
		micro     int
		grad      workload.Dtype
		copyIns   int
		layerIn   float64 // bytes of one layer's copy-in
		copyOut   float64 // bytes of the copy-out, 0: none
		embFactor float64 // the embedding's copy-in in units of its parameters
	}{
		{"off", false, 0, 4, 1, workload.BF16, 0, 0, 0, 0},
		{"bf16", true, 0, 4, 1, workload.BF16, 3, 4 * P, 4 * (2*P + emb), 4},
		{"fp32", true, 0, 4, 1, workload.FP32, 3, 8 * P, 8 * (2*P + emb), 8},
		{"bf16, 3 micro-batches", true, 0, 4, 3, workload.BF16, 3, 4 * P, 4 * (2*P + emb), 4},
		{"one rank", true, 0, 1, 1, workload.BF16, 0, 0, 0, 0},
		{"zero 1", true, 1, 4, 1, workload.BF16, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := zero3Config(t, P, tc.micro)
			l, err := NewLayout(1, 1, 1, tc.dp, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Layout = l
			cfg.Model.TiedEmbeddings = true
			cfg.Zero, cfg.GradDtype, cfg.BucketParams, cfg.DDPGradCopy = tc.zero, tc.grad, P, tc.copy
			progs, err := Build(cfg, copyPricer{unitPricer{unit: engine.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			x := NewSymmetric(engine.New(), cfg.Layout, progs)
			if err := x.Run(); err != nil {
				t.Fatal(err)
			}
			_, _, prog, start, end := x.Instance(0)
			ins, outs := 0, 0
			var inEnd []engine.Time // copy-ins' ends, in program order
			var reduceStart []engine.Time
			var lastReduce, outStart, outEnd, optStart engine.Time = -1, -1, -1, -1
			for i, task := range prog.Tasks {
				switch task.Name.String() {
				case "ddp_grad_copy_in":
					ins++
					want := tc.layerIn
					if task.Layer < 0 {
						want = tc.embFactor * emb
					}
					if task.Stream != StreamCompute || task.Bytes != want || task.Dur != engine.Time(want/10) {
						t.Errorf("layer %d copy-in on %v moves %g B in %v, want compute, %g B in %v", task.Layer, task.Stream, task.Bytes, task.Dur, want, engine.Time(want/10))
					}
					if int(task.Micro) != tc.micro-1 {
						t.Errorf("copy-in on micro-batch %d, want the last (%d)", task.Micro, tc.micro-1)
					}
					inEnd = append(inEnd, end[i])
				case "ddp_grad_copy_out":
					outs++
					if task.Stream != StreamCompute || task.Bytes != tc.copyOut || task.Dur != engine.Time(tc.copyOut/10) {
						t.Errorf("copy-out on %v moves %g B in %v, want compute, %g B in %v", task.Stream, task.Bytes, task.Dur, tc.copyOut, engine.Time(tc.copyOut/10))
					}
					outStart, outEnd = start[i], end[i]
				case "dp_grad_reduce":
					reduceStart = append(reduceStart, start[i])
					lastReduce = max(lastReduce, end[i])
				case "optimizer_step":
					optStart = start[i]
				}
			}
			wantOuts := 0
			if tc.copyOut > 0 {
				wantOuts = 1
			}
			if ins != tc.copyIns || outs != wantOuts {
				t.Fatalf("%d copy-ins and %d copy-outs, want %d and %d", ins, outs, tc.copyIns, wantOuts)
			}
			if ins == 0 {
				return
			}
			// one bucket per copy-in, each all-reduce after its copy
			if len(reduceStart) != ins {
				t.Fatalf("%d all-reduces for %d copy-ins", len(reduceStart), ins)
			}
			for k := range inEnd {
				if reduceStart[k] < inEnd[k] {
					t.Errorf("bucket %d's all-reduce starts at %v, before its copy-in ends (%v)", k, reduceStart[k], inEnd[k])
				}
			}
			if outStart < lastReduce || optStart < outEnd {
				t.Errorf("copy-out %v..%v, last all-reduce ends %v, optimizer starts %v: want all-reduces, copy-out, optimizer in turn",
					outStart, outEnd, lastReduce, optStart)
			}
		})
	}
}
