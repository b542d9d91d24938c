package scenario

import (
	"errors"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// TestFillStepConfigEqualsStepConfig: FillStepConfig into a StepConfig
// that held another plan's step, with the fields the simulator sets after
// (Arena, Interrupt, DeviceClass, EmitEveryLayer) set, gives every field
// StepConfig gives (the functions compared by their answers, LayerParams
// also with the model's own), whatever the plan before it.
func TestFillStepConfigEqualsStepConfig(t *testing.T) {
	files := []string{"llama3-405b-16k-h100.yaml", "quickstart.yaml", "deepseek-v3-256-gb200.yaml",
		"llama3-70b-h100-h200-pp.yaml", "mixtral-8x7b-ep8.yaml", "gpt3-175b-a100.yaml"}
	var dst parallel.StepConfig
	for round := 0; round < 2; round++ {
		for k := range files {
			f := files[k]
			if round == 1 {
				f = files[len(files)-1-k]
			}
			s, err := Load("../../scenarios/" + f)
			if err != nil {
				t.Fatal(err)
			}
			l, err := s.NewLayout()
			if err != nil {
				t.Fatal(err)
			}
			want := s.StepConfig(l)
			s.FillStepConfig(&dst, l)
			got := dst
			for layer := -1; layer <= s.Arch().Layers; layer++ {
				gd, ge := got.LayerParams(layer)
				wd, we := want.LayerParams(layer)
				ad, ae := s.Arch().LayerParams(layer) // the model's own, as StepConfig bound it before
				if gd != wd || ge != we || gd != ad || ge != ae {
					t.Fatalf("%s layer %d: LayerParams %g %g, want %g %g", f, layer, gd, ge, wd, we)
				}
			}
			if (got.Interrupt == nil) != (want.Interrupt == nil) {
				t.Fatalf("%s: Interrupt set %v, want %v", f, got.Interrupt != nil, want.Interrupt != nil)
			}
			got.LayerParams, got.Interrupt = nil, nil
			want.LayerParams, want.Interrupt = nil, nil
			if !reflect.DeepEqual(got, *want) {
				t.Fatalf("%s round %d: filled %+v\nwant %+v", f, round, got, *want)
			}
			// what Run sets after, left for the next plan to clear
			dst.Arena, dst.DeviceClass, dst.EmitEveryLayer = new(parallel.Arena), []int{0, 1}, true
			dst.Interrupt = func() error { return errors.New("stale") }
		}
	}
}
