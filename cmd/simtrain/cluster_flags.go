package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/topology"
)

// knob is the registry entry of a scenario field a flag mirrors, so that
// the flag's default and choices are the field's.
func knob(path string) *scenario.Knob {
	k, err := scenario.Lookup(path)
	if err != nil {
		panic(err) // a path written in this file
	}
	return k
}

// knobDefault is a field's constant default as a flag default.
func knobDefault(path string) string { return knob(path).DefaultText() }

// addClusterFlags registers the flags that describe a cluster on the
// commands that build one without a scenario file (collective, topology);
// withPods adds the pod and oversubscription flags.
func addClusterFlags(f *pflag.FlagSet, spec *topology.Spec, withPods bool) {
	f.StringVar(&spec.GPU, "gpu", "", "GPU catalog name (required): "+catalogGPUsMark)
	f.IntVar(&spec.Nodes, "nodes", 1, "number of nodes (servers; compute trays for NVL72)")
	f.IntVar(&spec.GPUsPerNode, "gpus-per-node", 0, "GPUs per node (0: the GPU's default, 8, or 4 for gb200/gb300)")
	f.StringVar(&spec.IntraNode, "intra-node", "", strings.Join(scenario.Choices("cluster.intra_node"), " | ")+" (default: the GPU's usual)")
	f.StringVar(&spec.Network, "network", knobDefault("cluster.network.kind"), strings.Join(scenario.Choices("cluster.network.kind"), " | "))
	f.StringVar(&spec.NIC, "nic", knobDefault("cluster.network.nic"), "NIC catalog name: "+catalogNICsMark)
	f.Float64Var(&spec.NICGbps, "nic-gbps", 0, "NIC line rate in Gb/s (0: the catalog's)")
	f.IntVar(&spec.NICsPerNode, "nics-per-node", 0, "NICs per node (0: one per GPU)")
	if withPods {
		f.Float64Var(&spec.Oversubscription, "oversubscription", knob("cluster.network.oversubscription").Const.(float64), "bandwidth ratio above the pod (or the leaf when --pod-gpus is 0); 7 means 1:7")
		f.IntVar(&spec.PodGPUs, "pod-gpus", 0, "GPUs per full-bisection pod (0: the whole cluster)")
	}
}

// checkClusterFlags rejects unknown catalog names and kinds with a usage
// error that lists the valid choices; sizes are checked by topology.Build.
func checkClusterFlags(spec topology.Spec) error {
	if spec.GPU == "" {
		return usageErrorf("--gpu: required (valid: %s)", strings.Join(scenario.Choices("cluster.gpu"), ", "))
	}
	for _, c := range []struct{ flag, path, v string }{
		{"gpu", "cluster.gpu", spec.GPU}, {"nic", "cluster.network.nic", spec.NIC}, {"network", "cluster.network.kind", spec.Network},
		{"intra-node", "cluster.intra_node", spec.IntraNode},
	} {
		if c.v == "" && c.flag == "intra-node" {
			continue // the GPU's usual
		}
		if err := checkChoice(c.flag, c.v, scenario.Choices(c.path)...); err != nil {
			return err
		}
	}
	return nil
}
