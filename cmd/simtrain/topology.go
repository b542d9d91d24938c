package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/topology"
)

// specFlags maps a topology.SpecError field to the flag that sets it.
var specFlags = map[string]string{
	"cluster.gpu":                      "gpu",
	"cluster.nodes":                    "nodes",
	"cluster.gpus_per_node":            "gpus-per-node",
	"cluster.intra_node":               "intra-node",
	"cluster.network.kind":             "network",
	"cluster.network.nic":              "nic",
	"cluster.network.nic_gbps":         "nic-gbps",
	"cluster.network.nics_per_node":    "nics-per-node",
	"cluster.network.oversubscription": "oversubscription",
	"cluster.network.pod_gpus":         "pod-gpus",
}

func newTopologyCmd() *cobra.Command {
	var (
		spec   topology.Spec
		format string
	)
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Build a cluster and summarise its devices, links, bisection and diameter",
		Long: `topology builds the cluster graph simtrain simulates on (GPUs, NVSwitches,
PCIe switches, NICs, leaf/spine/core switches and the links between them) and
prints what was built: device and cable counts by kind, per-GPU scale-up and
scale-out bandwidth, bisection bandwidth (the minimum cut between the two
halves of the GPU ranks, one direction) and the diameter in hops between GPUs.
Bandwidths are line rates in bytes/s (GB/s = 1e9 B/s).

--format json prints one JSON object (snake_case keys with units); --format dot
prints the graph for Graphviz.`,
		Example: `  simtrain topology --gpu h100-sxm --nodes 4
  simtrain topology --gpu h100-sxm --nodes 2048 --format json
  simtrain topology --gpu h100-sxm --nodes 3072 --network clos --nic roce-400 --pod-gpus 3072 --oversubscription 7
  simtrain topology --gpu gb200 --nodes 18 --format dot > nvl72.dot`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkClusterFlags(spec); err != nil {
				return err
			}
			if err := checkChoice("format", format, "table", "json", "dot"); err != nil {
				return err
			}
			c, err := topology.Build(spec)
			if err != nil {
				return specUsageError(err)
			}
			w := cmd.OutOrStdout()
			switch format {
			case "dot":
				b, err := c.DOT()
				if err != nil {
					return err
				}
				_, err = w.Write(b)
				return err
			case "json":
				return writeJSONLine(w, c.Summary())
			}
			return writeTopologyTable(w, c.Summary())
		},
	}
	f := cmd.Flags()
	addClusterFlags(f, &spec, true)
	f.StringVar(&format, "format", "table", "table | json | dot")
	return cmd
}

// specUsageError turns a topology.SpecError into a usage error naming the
// flag instead of the scenario field.
func specUsageError(err error) error {
	var se *topology.SpecError
	if errors.As(err, &se) {
		if flag, ok := specFlags[se.Field]; ok {
			return usageErrorf("--%s: %s", flag, se.Msg)
		}
	}
	return usageErrorf("%v", err)
}

// gbps formats bytes/s as GB/s, TB/s or PB/s (decimal units).
func gbps(bytesPerS float64) string {
	switch {
	case bytesPerS >= 1e15:
		return numfmt.Compact(bytesPerS/1e15, 4) + " PB/s"
	case bytesPerS >= 1e12:
		return numfmt.Compact(bytesPerS/1e12, 4) + " TB/s"
	}
	return numfmt.Compact(bytesPerS/1e9, 4) + " GB/s"
}

func writeTopologyTable(w io.Writer, s topology.Summary) error {
	pods := fmt.Sprintf("%d pod", s.Pods)
	if s.Pods != 1 {
		pods += "s"
	}
	over := "non-blocking"
	if s.Oversubscription != 1 {
		where := "pods"
		if s.PodGPUs == 0 {
			where = "leaves"
		}
		over = fmt.Sprintf("1:%s above the %s", numfmt.Plain(s.Oversubscription), where)
	}
	scaleUp := "none"
	if s.ScaleUpBytesPerSPerGPU > 0 {
		scaleUp = gbps(s.ScaleUpBytesPerSPerGPU) + " per GPU"
	}
	kv := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(kv, "cluster\t%s × %d %s = %s GPUs, intra-node %s\n", groupedInt(s.Nodes), s.GPUsPerNode, s.GPU, groupedInt(s.GPUs), s.IntraNode)
	fmt.Fprintf(kv, "network\t%s, %d × %s (%s Gb/s) per node, %d tiers, %s, %s\n", s.Network, s.NICsPerNode, s.NIC, numfmt.Plain(s.NICGbps), s.NetworkTiers, pods, over)
	fmt.Fprintf(kv, "domains\t%s NVLink domains of up to %d GPUs\n", groupedInt(s.Domains), s.DomainGPUs)
	fmt.Fprintf(kv, "scale-up\t%s\n", scaleUp)
	fmt.Fprintf(kv, "scale-out\t%s per GPU\n", gbps(s.ScaleOutBytesPerSPerGPU))
	fmt.Fprintf(kv, "bisection\t%s (NICs only: %s)\n", gbps(s.BisectionBytesPerS), gbps(s.NetworkBisectionBytesPerS))
	fmt.Fprintf(kv, "diameter\t%d hops\n\n", s.DiameterHops)
	if err := kv.Flush(); err != nil {
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "device\tcount\t")
	for _, d := range s.Devices {
		fmt.Fprintf(tw, "%s\t%d\t\n", d.Kind, d.Count)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "tier\tkind\tlinks\tcables\tper link\ttotal\t")
	for _, l := range s.Links {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t\n", l.Tier, l.Kind, l.Links, l.Cables, gbps(l.BytesPerSPerLink), gbps(l.TotalBytesPerS))
	}
	return tw.Flush()
}
