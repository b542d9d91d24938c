package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/limits"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/workload"
)

func newListCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "list gpus|nics|models|frameworks [NAME|FILE]",
		Short: "Print the hardware and model catalogs, or one record with its sources",
		Long: `list prints the catalog simtrain draws on: the GPUs (cluster.gpu), the NICs
(cluster.network.nic), the model presets (model.preset) and the framework
profiles (training.framework).

With a NAME it prints that entry: for a GPU or NIC every figure with its
provenance (datasheet, measured, derived, estimate, fitted or inherited, and
where it comes from). --format yaml prints a GPU's or NIC's record as its file
holds it: the starting point for a record of your own, which cluster.gpu then
takes as a path (relative to the scenario file). A FILE (ending in .yaml)
instead of a GPU name reads and checks such a record. For a framework it
prints every field the profile sets, its value, the condition it applies
under and its source.`,
		Example: `  simtrain list gpus
  simtrain list gpus h100-sxm
  simtrain list gpus h100-sxm --format yaml > my-gpu.yaml
  simtrain list gpus my-gpu.yaml
  simtrain list nics --format json
  simtrain list models
  simtrain list frameworks torchtitan`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErrorf("list takes gpus, nics, models or frameworks and an optional name (got %d arguments)", len(args))
			}
			return checkChoice("list", args[0], "gpus", "nics", "models", "frameworks")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkChoice("format", format, "table", "json", "yaml"); err != nil {
				return err
			}
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			w := cmd.OutOrStdout()
			switch args[0] {
			case "gpus":
				return listGPUs(w, name, format)
			case "nics":
				return listNICs(w, name, format)
			case "frameworks":
				return listFrameworks(w, name, format)
			}
			return listModels(w, name, format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "table | json | yaml (yaml: one GPU or NIC record)")
	return cmd
}

// gpuRow is one GPU in the catalog listing.
type gpuRow struct {
	Name             string  `json:"name"`
	Arch             string  `json:"arch"`
	Inherits         string  `json:"inherits,omitempty"`
	HBMBytes         float64 `json:"hbm_bytes"`
	HBMBytesPerS     float64 `json:"hbm_bytes_per_s"`
	BF16FLOPS        float64 `json:"bf16_flop_per_s"`
	FP8FLOPS         float64 `json:"fp8_flop_per_s"`
	FP4FLOPS         float64 `json:"fp4_flop_per_s"`
	ScaleUp          string  `json:"scale_up"`
	ScaleUpBytesPerS float64 `json:"scale_up_bytes_per_s"`
	DomainGPUs       int     `json:"domain_gpus"`
	TDPWatts         float64 `json:"tdp_watts"`
	GPUHourUSD       float64 `json:"gpu_hour_usd"`
	Description      string  `json:"description,omitempty"`
	// Sources, for one GPU, lists every figure: "field: kind: reference".
	Sources []string `json:"sources,omitempty"`
}

func rowOf(g hardware.GPU) gpuRow {
	return gpuRow{Name: g.Name, Arch: g.Arch, Inherits: g.Inherits, HBMBytes: float64(g.HBMBytes),
		HBMBytesPerS: float64(g.HBMBandwidth), BF16FLOPS: float64(g.Peak.BF16), FP8FLOPS: float64(g.Peak.FP8),
		FP4FLOPS: float64(g.Peak.FP4), ScaleUp: g.ScaleUp, ScaleUpBytesPerS: float64(g.ScaleUpBandwidth),
		DomainGPUs: g.DomainGPUs, TDPWatts: g.TDPWatts, GPUHourUSD: g.GPUHourUSD, Description: g.Description}
}

func listGPUs(w io.Writer, name, format string) error {
	if name == "" {
		if format == "yaml" {
			return usageErrorf("--format yaml prints one record: give a GPU name (valid: %s)", strings.Join(hardware.GPUNames(), ", "))
		}
		var rows []gpuRow
		for _, n := range hardware.GPUNames() {
			g, _ := hardware.LookupGPU(n)
			rows = append(rows, rowOf(g))
		}
		if format == "json" {
			for _, r := range rows {
				if err := writeJSONLine(w, r); err != nil {
					return err
				}
			}
			return nil
		}
		tw := newTable(w)
		fmt.Fprintln(tw, "gpu\tarch\tHBM GB\tTB/s\tBF16 TFLOP/s\tFP8\tFP4\tscale-up\tGB/s\tdomain\tinherits\t")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", r.Name, r.Arch, numfmt.Grouped(r.HBMBytes/1e9),
				numfmt.Compact(r.HBMBytesPerS/1e12, 3), numfmt.Grouped(r.BF16FLOPS/1e12), orDash(r.FP8FLOPS/1e12), orDash(r.FP4FLOPS/1e12), r.ScaleUp,
				orDash(r.ScaleUpBytesPerS/1e9), r.DomainGPUs, dashIfEmpty(r.Inherits))
		}
		return tw.Flush()
	}
	g, rec, err := gpuArg(name)
	if err != nil {
		return err
	}
	switch format {
	case "yaml":
		return writeYAML(w, rec)
	case "json":
		r := rowOf(g)
		r.Sources = g.Sources
		return writeJSONLine(w, r)
	}
	fmt.Fprintf(w, "%s  (%s%s)\n", g.Name, g.Arch, inheritNote(g))
	if g.Description != "" {
		fmt.Fprintf(w, "  %s\n", g.Description)
	}
	return writeSources(w, g.Sources)
}

// gpuArg resolves a catalog GPU name or a GPU record file.
func gpuArg(name string) (hardware.GPU, hardware.GPURecord, error) {
	if scenario.IsGPUFile(name) {
		data, err := limits.ReadFile(name, limits.MaxInputBytes)
		if err != nil {
			return hardware.GPU{}, hardware.GPURecord{}, usageErrorf("list gpus: %v", err)
		}
		g, err := hardware.ParseGPU(data)
		if err != nil {
			return hardware.GPU{}, hardware.GPURecord{}, usageErrorf("%s: %v", name, err)
		}
		return g, g.Record, nil
	}
	g, err := hardware.LookupGPU(name)
	if err != nil {
		return g, hardware.GPURecord{}, usageErrorf("list gpus: %v", err)
	}
	return g, g.Record, nil
}

// inheritNote says which of a GPU's figures come from its reference GPU.
func inheritNote(g hardware.GPU) string {
	if g.Inherits == "" {
		return ""
	}
	return fmt.Sprintf("; %d of its figures inherited from %s", g.InheritedFigures(), g.Inherits)
}

func listNICs(w io.Writer, name, format string) error {
	type nicRow struct {
		Name       string   `json:"name"`
		Kind       string   `json:"kind"`
		Gbps       float64  `json:"gbps"`
		LatencyNs  int64    `json:"latency_ns"`
		Efficiency float64  `json:"efficiency"`
		Sources    []string `json:"sources,omitempty"`
	}
	rowOf := func(n hardware.NIC) nicRow {
		return nicRow{Name: n.Name, Kind: n.Kind, Gbps: n.Gbps, LatencyNs: n.Latency.Nanoseconds(), Efficiency: n.Comm.Efficiency}
	}
	if name == "" {
		if format == "yaml" {
			return usageErrorf("--format yaml prints one record: give a NIC name (valid: %s)", strings.Join(hardware.NICNames(), ", "))
		}
		tw := newTable(w)
		if format == "table" {
			fmt.Fprintln(tw, "nic\tkind\tGb/s\tlatency ns\tefficiency\t")
		}
		for _, n := range hardware.NICNames() {
			nic, _ := hardware.LookupNIC(n)
			r := rowOf(nic)
			if format == "json" {
				if err := writeJSONLine(w, r); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", r.Name, r.Kind, numfmt.Plain(r.Gbps), numfmt.Grouped(float64(r.LatencyNs)), numfmt.Compact(r.Efficiency, 3))
		}
		return tw.Flush()
	}
	nic, err := hardware.LookupNIC(name)
	if err != nil {
		return usageErrorf("list nics: %v", err)
	}
	switch format {
	case "yaml":
		return writeYAML(w, nic.Record)
	case "json":
		r := rowOf(nic)
		r.Sources = nic.Sources
		return writeJSONLine(w, r)
	}
	fmt.Fprintf(w, "%s  (%s)\n", nic.Name, nic.Kind)
	return writeSources(w, nic.Sources)
}

func listModels(w io.Writer, name, format string) error {
	if format == "yaml" {
		return usageErrorf("--format: yaml prints hardware records; models list as table or json")
	}
	type modelRow struct {
		Name         string  `json:"name"`
		Layers       int     `json:"layers"`
		Hidden       int     `json:"hidden"`
		Heads        int     `json:"heads"`
		KVHeads      int     `json:"kv_heads"`
		FFN          int     `json:"ffn"`
		Vocab        int     `json:"vocab"`
		Experts      int     `json:"experts,omitempty"`
		TopK         int     `json:"top_k,omitempty"`
		Params       float64 `json:"params"`
		ActiveParams float64 `json:"active_params"`
		Source       string  `json:"source,omitempty"`
	}
	names := workload.PresetNames()
	if name != "" {
		if _, err := workload.Preset(name); err != nil {
			return usageErrorf("list models: %v", err)
		}
		names = []string{name}
	}
	tw := newTable(w)
	if format == "table" {
		fmt.Fprintln(tw, "model\tlayers\thidden\theads\tkv\tffn\tvocab\texperts\tparams\tactive\t")
	}
	for _, n := range names {
		m, _ := workload.Preset(n)
		p := m.Params()
		r := modelRow{Name: m.Name, Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads, KVHeads: m.KVHeads, FFN: m.FFN,
			Vocab: m.Vocab, Params: p.Total, ActiveParams: p.Active}
		if name != "" {
			r.Source = m.Source
		}
		experts := "-"
		if m.MoE != nil {
			r.Experts, r.TopK = m.MoE.Experts, m.MoE.TopK
			experts = fmt.Sprintf("%d (top %d)", m.MoE.Experts, m.MoE.TopK)
		}
		if format == "json" {
			if err := writeJSONLine(w, r); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%sB\t%sB\t\n", r.Name, r.Layers, numfmt.Grouped(float64(r.Hidden)), r.Heads, r.KVHeads,
			numfmt.Grouped(float64(r.FFN)), numfmt.Grouped(float64(r.Vocab)), experts, numfmt.Compact(r.Params/1e9, 3), numfmt.Compact(r.ActiveParams/1e9, 3))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if name != "" && format == "table" {
		m, _ := workload.Preset(name)
		fmt.Fprintf(w, "  source: %s\n", m.Source)
	}
	return nil
}

// listFrameworks prints the framework profiles (sim/hardware
// data/frameworks.yaml), or one profile's defaults with their sources.
func listFrameworks(w io.Writer, name, format string) error {
	if format == "yaml" {
		return usageErrorf("--format: yaml prints hardware records; frameworks list as table or json")
	}
	type defaultRow struct {
		Path   string              `json:"path"`
		Value  string              `json:"value"`
		When   map[string][]string `json:"when,omitempty"`
		Since  string              `json:"since,omitempty"`
		Until  string              `json:"until,omitempty"`
		Source string              `json:"source"`
	}
	type frameworkRow struct {
		Name        string       `json:"name"`
		Description string       `json:"description"`
		Defaults    []defaultRow `json:"defaults"`
	}
	names := hardware.FrameworkNames()
	if name != "" {
		if _, err := hardware.LookupFramework(name); err != nil {
			return usageErrorf("list frameworks: %v", err)
		}
		names = []string{name}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if format == "table" && name == "" {
		fmt.Fprintln(tw, "framework\tsets\tdescription")
	}
	for _, n := range names {
		p, _ := hardware.LookupFramework(n)
		r := frameworkRow{Name: p.Name, Description: p.Description}
		for _, d := range p.Defaults {
			r.Defaults = append(r.Defaults, defaultRow{Path: d.Path, Value: d.Value.Value, When: d.When, Since: d.Since, Until: d.Until, Source: d.Source})
		}
		switch {
		case format == "json":
			if err := writeJSONLine(w, r); err != nil {
				return err
			}
		case name == "":
			fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Name, len(r.Defaults), r.Description)
		default:
			fmt.Fprintf(w, "%s: %s\n", r.Name, r.Description)
			for _, d := range r.Defaults {
				cond := ""
				for _, k := range slices.Sorted(maps.Keys(d.When)) {
					cond += fmt.Sprintf(" (with %s %s)", k, strings.Join(d.When[k], " or "))
				}
				if d.Since != "" {
					cond += " (framework_date from " + d.Since + ")"
				}
				if d.Until != "" {
					cond += " (framework_date before " + d.Until + ")"
				}
				fmt.Fprintf(w, "  %s: %s%s\n    %s\n", d.Path, d.Value, cond, d.Source)
			}
		}
	}
	if format == "table" && name == "" {
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "auto (the default) applies no profile; explicit fields always win. simtrain list frameworks NAME for the sources.")
	}
	return nil
}

// writeSources prints one figure per line, "field  kind: reference".
func writeSources(w io.Writer, sources []string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range sources {
		field, rest, _ := strings.Cut(s, ": ")
		fmt.Fprintf(tw, "  %s\t%s\n", field, rest)
	}
	return tw.Flush()
}

func writeYAML(w io.Writer, v any) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return enc.Close()
}

func orDash(x float64) string {
	if x == 0 {
		return "-"
	}
	return numfmt.Grouped(x)
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
