package main

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The -update flag rewrites the golden files; it is registered once for the
// package whichever golden test defines it first.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata/")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// runCollective runs `simtrain collective args...` through the root command.
func runCollective(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLI(t, append([]string{"collective"}, args...)...)
	return out, err
}

// TestCollectiveGolden pins the table output (regenerate with
// go test ./cmd/simtrain -run TestCollectiveGolden -update).
func TestCollectiveGolden(t *testing.T) {
	cases := []struct {
		file string
		args []string
	}{
		// hardware-facts §2c's sweep on 8 H100 (NVLS at large sizes).
		{"collective_h100_all_reduce.golden", []string{"--gpu", "h100-sxm", "--nodes", "1", "--op", "all_reduce", "--sizes", "1K:8G"}},
		// DGX A100 over HDR: ring busbw tends to 8 x 24 GB/s.
		{"collective_a100_4nodes_ring.golden", []string{"--gpu", "a100-80gb", "--nodes", "4", "--nic", "ib-hdr-200", "--algo", "ring", "--sizes", "1M,64M,1G,8G"}},
		// Flow fidelity of an all_to_all across two nodes.
		{"collective_h100_a2a_flow.golden", []string{"--gpu", "h100-sxm", "--nodes", "2", "--op", "all_to_all", "--sizes", "1M:1G", "--fidelity", "flow"}},
	}
	for _, tc := range cases {
		out, err := runCollective(t, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		path := filepath.Join("testdata", tc.file)
		if updateGolden() {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if out != string(want) {
			t.Errorf("%s differs from simtrain collective %s:\n%s", path, strings.Join(tc.args, " "), out)
		}
		again, _ := runCollective(t, tc.args...)
		if again != out {
			t.Errorf("%v: two runs print different output", tc.args)
		}
	}
}

func TestCollectiveJSON(t *testing.T) {
	out, err := runCollective(t, "--gpu", "h100-sxm", "--op", "all_reduce", "--algo", "nvls", "--sizes", "1M,8G", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", out)
	}
	keys := []string{"op", "size_bytes", "time_us", "algbw_gbps", "busbw_gbps", "algo", "ranks"}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("line %d lacks %q: %s", i, k, line)
			}
		}
		if len(m) != len(keys) || m["op"] != "all_reduce" || m["algo"] != "nvls" || m["ranks"] != float64(8) {
			t.Errorf("line %d: %s", i, line)
		}
	}
	// 8 GiB NVLS: busbw 479 GB/s (hardware-facts §2a: 478.87), algbw = busbw x 8/14.
	var last map[string]float64
	_ = json.Unmarshal([]byte(strings.ReplaceAll(strings.ReplaceAll(lines[1], `"all_reduce"`, "0"), `"nvls"`, "0")), &last)
	if b := last["busbw_gbps"]; b < 470 || b > 490 || last["size_bytes"] != 8<<30 ||
		abs(last["algbw_gbps"]*14/8/b-1) > 1e-12 || abs(float64(8<<30)/(last["time_us"]*1e3)/last["algbw_gbps"]-1) > 1e-9 {
		t.Errorf("8 GiB row: %v", last)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestCollectiveFlowMatchesAnalytic(t *testing.T) {
	args := []string{"--gpu", "h100-sxm", "--nodes", "4", "--op", "all_reduce", "--algo", "hierarchical", "--sizes", "1G", "--format", "json"}
	a, err := runCollective(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	f, err := runCollective(t, append(args, "--fidelity", "flow")...)
	if err != nil {
		t.Fatal(err)
	}
	var ra, rf map[string]any
	if json.Unmarshal([]byte(a), &ra) != nil || json.Unmarshal([]byte(f), &rf) != nil {
		t.Fatalf("bad json %q %q", a, f)
	}
	if d := rf["time_us"].(float64)/ra["time_us"].(float64) - 1; abs(d) > 0.02 {
		t.Errorf("flow %v µs, analytic %v µs", rf["time_us"], ra["time_us"])
	}
}

// TestCollectiveBadInput: one-line usage errors (exit status 2) that name
// the flag and, where there is a list, the valid choices.
func TestCollectiveBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{}, []string{"--gpu: required", "h100-sxm"}},
		{[]string{"--gpu", "h100"}, []string{"--gpu", `"h100"`, "valid:", "h100-sxm"}},
		{[]string{"--gpu", "h100-sxm", "--nic", "ib-qdr"}, []string{"--nic", "valid:", "ib-ndr-400"}},
		{[]string{"--gpu", "h100-sxm", "--network", "torus"}, []string{"--network", "valid:", "rail-optimized"}},
		{[]string{"--gpu", "h100-sxm", "--op", "allreduce"}, []string{"--op", "valid:", "all_reduce"}},
		{[]string{"--gpu", "h100-sxm", "--algo", "pat"}, []string{"--algo", "valid:", "hierarchical"}},
		{[]string{"--gpu", "h100-pcie", "--algo", "nvls"}, []string{"--algo", "no NVLink SHARP", "valid: auto, ring, tree"}},
		{[]string{"--gpu", "h100-sxm", "--op", "broadcast", "--algo", "tree"}, []string{"--algo", "valid: auto, ring"}},
		{[]string{"--gpu", "h100-sxm", "--sizes", "0"}, []string{"--sizes", "must be > 0"}},
		{[]string{"--gpu", "h100-sxm", "--sizes", "-4K"}, []string{"--sizes", "must be > 0"}},
		{[]string{"--gpu", "h100-sxm", "--sizes", "1M:1K"}, []string{"--sizes", "below its start"}},
		{[]string{"--gpu", "h100-sxm", "--sizes", "lots"}, []string{"--sizes", "valid:"}},
		{[]string{"--gpu", "h100-sxm", "--ranks", "16"}, []string{"--ranks", "valid: 1..8"}},
		{[]string{"--gpu", "h100-sxm", "--nodes", "2", "--ranks", "-1"}, []string{"--ranks", "valid: 1..16"}},
		{[]string{"--gpu", "h100-sxm", "--nodes", "0"}, []string{"--nodes", "> 0"}},
		{[]string{"--gpu", "h100-sxm", "--fidelity", "packet"}, []string{"--fidelity", "valid: analytic, flow"}},
		{[]string{"--gpu", "h100-sxm", "--format", "csv"}, []string{"--format", "valid: table, json"}},
		{[]string{"--gpu", "h100-sxm", "--op", "send", "--ranks", "1"}, []string{"--ranks", "send needs 2 ranks"}},
		{[]string{"--gpu", "h100-sxm", "extra"}, []string{"no arguments"}},
	}
	for _, tc := range cases {
		out, err := runCollective(t, tc.args...)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("%v: err %v (want a usage error), output %q", tc.args, err, out)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || out != "" {
			t.Errorf("%v: multi-line error or output: %q / %q", tc.args, msg, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: %q lacks %q", tc.args, msg, w)
			}
		}
	}
}

func TestParseSizes(t *testing.T) {
	cases := []struct {
		in   string
		want []int64
	}{
		{"1K:8K", []int64{1024, 2048, 4096, 8192}},
		{"3K:16K", []int64{3072, 6144, 12288}}, // doubles from 3K while <= 16K
		{"1M,64M,1G", []int64{1 << 20, 64 << 20, 1 << 30}},
		{"4096, 4KB ,4KiB,4k", []int64{4096, 4096, 4096, 4096}},
		{"1.5K", []int64{1536}},
		{"1T", []int64{1 << 40}},
		{"8G:8G", []int64{8 << 30}},
	}
	for _, tc := range cases {
		got, err := parseSizes(tc.in)
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("parseSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseSizes(%q) = %v, want %v", tc.in, got, tc.want)
				break
			}
		}
	}
	for _, bad := range []string{"", ",", "1K:", ":1K", "0", "-1", "1.2345K", "1P", "2000T", "NaN", "1e400", "1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T,1:1T"} {
		if got, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) = %v, want an error", bad, got)
		}
	}
}
