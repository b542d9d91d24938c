package scenario

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/workload"
	"go.yaml.in/yaml/v3"
)

// TestSharedModel: plans that resolve the same model share it (one Model
// for a sweep's points), plans of other models do not, and sharing leaves
// every plan's architecture as resolved, checked against the preset; a
// plan whose resolution stopped before the model reads the zero Model,
// and the knob columns that read the model answer for it as before
// (a dense model's).
func TestSharedModel(t *testing.T) {
	load := func(f string) *Plan {
		s, err := Load("../../scenarios/" + f)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := load("llama3-70b-1024-h100-3d.yaml"), load("llama3-70b-1024-h100-3d.yaml")
	if a.r.model != b.r.model {
		t.Error("two plans of one model hold two copies")
	}
	c := load("llama3-405b-16k-h100.yaml")
	d := load("llama3-70b-1024-h100-3d.yaml")
	if c.r.model == a.r.model || c.Arch() == a.Arch() {
		t.Error("the 405B plan shares the 70B plan's model")
	}
	if d.r.model == c.r.model {
		t.Error("the 70B plan after the 405B one holds the 405B model")
	}
	for _, s := range []*Plan{a, b, d} {
		want, err := workload.Preset(s.Model.Preset)
		if err != nil {
			t.Fatal(err)
		}
		want.Fill()
		if got := s.Arch(); got.Layers != want.Layers || got.Hidden != want.Hidden || got.Name != want.Name || got.FFN != want.FFN {
			t.Errorf("%s: architecture %+v, preset %+v", s.Name, got, want)
		}
	}
	m1, m2 := load("mixtral-8x7b-ep8.yaml"), load("mixtral-8x7b-ep8.yaml")
	if m1.r.model == m2.r.model || !reflect.DeepEqual(m1.Arch(), m2.Arch()) || m1.Arch().MoE == nil {
		t.Error("MoE plans: shared, or not equal")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("model:\n  preset: no-such-model\n"), &doc); err != nil {
		t.Fatal(err)
	}
	bad, err := ParsePartial(&doc, "", "bad")
	if err == nil {
		t.Fatal("an unknown preset resolved")
	}
	if bad.r.model != nil || !reflect.DeepEqual(bad.Arch(), workload.Model{}) {
		t.Errorf("unresolved plan: model %v, Arch %+v", bad.r.model, bad.Arch())
	}
	if got := fmt.Sprint(moeImbalanceColumn(bad), mustKnob("model.moe.dropless").Value.(func(*Plan) bool)(bad)); got != "0 false" {
		t.Errorf("unresolved plan's MoE columns: %s, want 0 false", got)
	}
}

// A plan's StepConfig.LayerParams (bound once per shared model,
// layerParams) answers with the plan's own model, whether its model is the
// last one shared (the bound value) or another model was shared since (a
// value bound for it): plans of three models resolved in turn, each
// asked after the others.
func TestLayerParamsBoundOnce(t *testing.T) {
	load := func(f string) *Plan {
		s, err := Load("../../scenarios/" + f)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	plans := []*Plan{load("llama3-70b-1024-h100-3d.yaml"), load("llama3-405b-16k-h100.yaml"),
		load("mixtral-8x7b-ep8.yaml"), load("llama3-70b-1024-h100-3d.yaml"), load("llama3-70b-1024-h100-3d.yaml")}
	if plans[3].r.model != plans[4].r.model || plans[0].r.model == plans[3].r.model {
		t.Fatal("the last two 70B plans do not share their model, or the first shares it")
	}
	for round, last := range []bool{true, false} {
		for i, s := range plans {
			if round == 0 && i < len(plans)-2 {
				continue // only the plans resolved last hold the last model
			}
			l, err := s.NewLayout()
			if err != nil {
				t.Fatal(err)
			}
			if e := lastModel.Load(); last && e.m != s.r.model {
				t.Fatalf("plan %d: its model is not the last shared", i)
			}
			cfg := s.StepConfig(l)
			m := s.Arch()
			for layer := -1; layer <= m.StackLayers(); layer++ {
				gd, ge := cfg.LayerParams(layer)
				wd, we := m.LayerParams(layer)
				if gd != wd || ge != we {
					t.Fatalf("plan %d (%s) layer %d: LayerParams %g, %g; its model's %g, %g", i, s.Model.Preset, layer, gd, ge, wd, we)
				}
			}
		}
	}
}
