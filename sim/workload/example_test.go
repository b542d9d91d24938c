package workload_test

import (
	"fmt"

	"github.com/simtrain/simtrain/sim/workload"
)

// A preset's exact size, its training FLOPs per token and the memory its
// model states need with mixed-precision AdamW.
func Example() {
	m, err := workload.Preset("llama3-70b")
	if err != nil {
		panic(err)
	}
	p := m.Params()
	b, _ := workload.ModelStateBytes(workload.BF16, workload.FP32, workload.BF16, "adamw")
	fmt.Printf("%s: %.1fB parameters\n", m.Name, p.Total/1e9)
	fmt.Printf("training FLOPs per token at 8K context: %.3g\n", m.ModelFLOPsPerToken(8192))
	fmt.Printf("model states: %.0f bytes/param, %.0f GB\n", b.Total(), p.Total*b.Total()/1e9)
	fmt.Printf("KV cache at 8K, bf16: %.2f GB\n", m.KVCacheBytesPerToken(workload.BF16)*8192/1e9)
	// Output:
	// llama3-70b: 70.6B parameters
	// training FLOPs per token at 8K context: 4.81e+11
	// model states: 16 bytes/param, 1129 GB
	// KV cache at 8K, bf16: 2.68 GB
}

// Block scaling with FP4: one outlier costs its whole block its resolution.
func ExampleQuantizeFP4Blocks() {
	x := []float64{1, 1, 1, 1, 1, 1, 1, 60}
	q8, _, _ := workload.QuantizeFP4Blocks(x, 8, workload.ScaleAbsMax)
	q4, _, _ := workload.QuantizeFP4Blocks(x, 4, workload.ScaleAbsMax)
	fmt.Println(q8)
	fmt.Println(q4)
	// Output:
	// [0 0 0 0 0 0 0 60]
	// [1 1 1 1 0 0 0 60]
}
