package simulation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

// baseScenario is the scenario the package's tests edit (sim/testdata).
var baseScenario = func() string {
	b, err := os.ReadFile("../testdata/base.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// parse parses baseScenario edited by kv.
func parse(kv ...string) (*scenario.Plan, error) {
	return scenario.Parse([]byte(baseScenario), scenario.Overrides(kv...)...)
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

// playable loads scenario file f for the whole-set tests (scenarioFiles),
// false for a cluster above 4,096 GPUs unless SIMTRAIN_ALL_SCENARIOS is
// set: the 16k-GPU runs take seconds each.
func playable(t *testing.T, f string) (*scenario.Plan, bool) {
	t.Helper()
	s, err := scenario.Load(f)
	if err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	return s, s.GPUs() <= 4096 || os.Getenv("SIMTRAIN_ALL_SCENARIOS") != ""
}

// scenarioFiles is every bundled scenario and every published run of
// scenarios/validation and scenarios/holdout (every third of those with
// -short), failing the test when fewer than 30 are found.
func scenarioFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	for _, pat := range []string{"../../scenarios/validation/*.yaml", "../../scenarios/holdout/*.yaml"} {
		m, _ := filepath.Glob(pat)
		for i := range m {
			if !testing.Short() || i%3 == 0 {
				files = append(files, m[i])
			}
		}
	}
	if len(files) < 30 {
		t.Fatalf("%d scenario files", len(files))
	}
	return files
}
