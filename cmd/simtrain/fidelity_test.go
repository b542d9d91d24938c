package main

import (
	"testing"

	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/scenario"
)

// overridesFlow finds a flow play in the overrides --fidelity and --set
// make (validate keeps huge pages for one: hugepages.CloseWhereUnpaid),
// the last override of sim.fidelity deciding.
func TestOverridesFlow(t *testing.T) {
	flowFid, analyticFid := network.Flow, network.Analytic
	flow, analytic := fidelityOverride(&flowFid), fidelityOverride(&analyticFid)
	for _, c := range []struct {
		name string
		ovs  []scenario.Override
		want bool
	}{
		{"none", nil, false},
		{"--fidelity flow", flow, true},
		{"--fidelity analytic", analytic, false},
		{"--set sim.fidelity=flow", scenario.Overrides("sim.fidelity", "flow"), true},
		{"quoted", scenario.Overrides("sim.fidelity", `"flow"`), true},
		{"other fields", scenario.Overrides("parallel.tp", "8", "training.micro_batch", "2"), false},
		{"--set flow, then --fidelity analytic", append(scenario.Overrides("sim.fidelity", "flow"), analytic...), false},
		{"--set analytic, then --fidelity flow", append(scenario.Overrides("sim.fidelity", "analytic"), flow...), true},
	} {
		if got := overridesFlow(c.ovs); got != c.want {
			t.Errorf("%s: overridesFlow(%v) = %v, want %v", c.name, c.ovs, got, c.want)
		}
	}
}
