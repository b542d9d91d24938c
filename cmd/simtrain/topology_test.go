package main

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// runTopology runs `simtrain topology args...` through the root command and
// returns stdout.
func runTopology(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLI(t, append([]string{"topology"}, args...)...)
	return out, err
}

func TestTopologyTable(t *testing.T) {
	out, err := runTopology(t, "--gpu", "h100-sxm", "--nodes", "4")
	if err != nil {
		t.Fatal(err)
	}
	// 4 DGX H100: halves of 2 nodes joined by 16 NDR NICs = 800 GB/s;
	// farthest GPUs 8 links apart (topology package tests derive both).
	for _, want := range []string{"4 × 8 h100-sxm = 32 GPUs", "rail-optimized, 8 × ib-ndr-400 (400 Gb/s) per node, 2 tiers, 1 pod, non-blocking",
		"bisection  800 GB/s (NICs only: 800 GB/s)", "diameter   8 hops", "nvswitch", "leaf-spine", "12.8 TB/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	again, _ := runTopology(t, "--gpu", "h100-sxm", "--nodes", "4")
	if again != out {
		t.Error("two runs print different output")
	}
}

func TestTopologyJSON(t *testing.T) {
	out, err := runTopology(t, "--gpu", "h100-sxm", "--nodes", "3072", "--network", "clos", "--nic", "roce-400",
		"--pod-gpus", "3072", "--oversubscription", "7", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("want one JSON line, got %q", out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	// Llama 3 cluster: 4 pods × 3072 GPUs × 50 GB/s / 7 across the middle.
	if m["gpus"] != float64(24576) || m["network"] != "clos" || math.Abs(m["bisection_bytes_per_s"].(float64)/(4*3072*50e9/7)-1) > 1e-9 {
		t.Errorf("json %v", m)
	}
}

func TestTopologyDOT(t *testing.T) {
	out, err := runTopology(t, "--gpu", "gb200", "--nodes", "18", "--format", "dot")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "strict graph cluster {") || !strings.Contains(out, `"n17/gpu3" -- "domain0/nvswitch"`) {
		t.Errorf("dot output:\n%.400s", out)
	}
}

func TestTopologyUsageErrors(t *testing.T) {
	for _, r := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes", "2"}, "--gpu: required (valid: a100-40gb"},
		{[]string{"--gpu", "h1000"}, `--gpu: unknown value "h1000" (valid: a100-40gb`},
		{[]string{"--gpu", "h100-sxm", "--nic", "ib-edr"}, `--nic: unknown value "ib-edr" (valid: eth-100`},
		{[]string{"--gpu", "h100-sxm", "--network", "torus"}, "--network: unknown value \"torus\" (valid: rail-optimized, fat-tree, clos, single-switch)"},
		{[]string{"--gpu", "h100-sxm", "--intra-node", "ring"}, "--intra-node: unknown value"},
		{[]string{"--gpu", "l40s", "--intra-node", "nvswitch"}, "--intra-node: nvswitch needs a GPU with NVLink or XGMI; l40s has none (valid for l40s: pcie)"},
		{[]string{"--gpu", "h100-sxm", "--format", "yaml"}, "--format: unknown value \"yaml\" (valid: table, json, dot)"},
		{[]string{"--gpu", "h100-sxm", "--nodes", "0"}, "--nodes: must be > 0"},
		{[]string{"--gpu", "h100-sxm", "--nodes", "-4"}, "--nodes: must be > 0"},
		{[]string{"--gpu", "h100-sxm", "--gpus-per-node", "-1"}, "--gpus-per-node:"},
		{[]string{"--gpu", "h100-sxm", "--nics-per-node", "3"}, "--nics-per-node: 3 must divide or be a multiple of gpus_per_node 8"},
		{[]string{"--gpu", "h100-sxm", "--nic-gbps", "-5"}, "--nic-gbps:"},
		{[]string{"--gpu", "h100-sxm", "--oversubscription", "0.5"}, "--oversubscription: must be >= 1"},
		{[]string{"--gpu", "h100-sxm", "--nodes", "4", "--pod-gpus", "24"}, "--pod-gpus: 24 must be a multiple of 256 GPUs"},
		{[]string{"--gpu", "h100-sxm", "--nodes", "lots"}, "invalid argument"},
		{[]string{"--gpu", "h100-sxm", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"--gpu", "h100-sxm", "extra"}, "extra"},
	} {
		_, err := runTopology(t, r.args...)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: error %v is not a usage error (exit 2)", r.args, err)
			continue
		}
		if !strings.Contains(err.Error(), r.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %q, want one line containing %q", r.args, err, r.want)
		}
	}
}

func TestTopologyHelp(t *testing.T) {
	out, err := runTopology(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Examples:", "simtrain topology --gpu h100-sxm --nodes 4", "--pod-gpus", "--format",
		"GPU catalog name (required): a100-40gb, a100-80gb, ", "NIC catalog name: eth-100, ib-hdr-200, "} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(out, "\x00") {
		t.Errorf("help holds an unfilled catalog mark:\n%s", out)
	}
}

// Building the command tree leaves the catalog's names as marks (filled in
// by help and completion): the cluster flags must not load the catalog
// for every command.
func TestClusterFlagsDeferCatalog(t *testing.T) {
	root := newRootCmd()
	for _, name := range []string{"topology", "collective"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		for flag, mark := range map[string]string{"gpu": catalogGPUsMark, "nic": catalogNICsMark} {
			if f := c.Flags().Lookup(flag); f == nil || !strings.Contains(f.Usage, mark) {
				t.Errorf("%s --%s: usage is not the catalog mark until help fills it in", name, flag)
			}
		}
	}
}
