package sim_test

import (
	"context"
	"fmt"

	"github.com/simtrain/simtrain/sim"
)

// A Go caller loads a scenario, simulates it and gets the row the CLI writes
// to summary.arrow; an override changes a field as the file would.
func Example() {
	plan, err := sim.Load("../scenarios/quickstart.yaml", sim.Override{Path: "training.micro_batch", Value: "2"})
	if err != nil {
		panic(err)
	}
	res, err := sim.Run(context.Background(), plan, sim.Options{})
	if err != nil {
		panic(err)
	}
	row := sim.Summary(plan, res)
	fmt.Println(row.Name, row.GPU, row.NumGPUs, row.MicroBatch, row.Microbatches, row.StepTimeS > 0)
	// Output: quickstart-llama3-8b-fsdp h100-sxm 8 2 1 true
}
