package sim

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

const baseScenario = `
name: t
model:
  preset: llama3-8b
training:
  seq_len: 4096
  global_batch: 64
cluster:
  gpu: h100-sxm
  nodes: 2
parallel:
  tp: 8
`

// kvs turns dotted-path, YAML-value pairs into overrides.
func kvs(kv ...string) []scenario.Override {
	out := make([]scenario.Override, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, scenario.Override{Path: kv[i], Value: kv[i+1]})
	}
	return out
}

// parse parses baseScenario edited by kv.
func parse(kv ...string) (*scenario.Plan, error) {
	return scenario.Parse([]byte(baseScenario), kvs(kv...)...)
}

// parseWith parses baseScenario edited first by base, then by kv.
func parseWith(t *testing.T, base []string, kv ...string) *scenario.Plan {
	t.Helper()
	s, err := parse(append(append([]string{}, base...), kv...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runWith parses as parseWith and runs the scenario with mustRun's checks.
func runWith(t *testing.T, base []string, kv ...string) *Result {
	t.Helper()
	return mustRun(t, parseWith(t, base, kv...), Options{})
}

// parseErrorCase is an edit that must not parse.
type parseErrorCase struct {
	kv   []string
	want string
}

// checkParseErrors: every case's edit, applied after base, fails with a
// one-line error containing want.
func checkParseErrors(t *testing.T, base []string, cases []parseErrorCase) {
	t.Helper()
	for _, c := range cases {
		_, err := parse(append(append([]string{}, base...), c.kv...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want %q", c.kv, err, c.want)
		}
	}
}
