package scenario

import (
	"strings"
	"testing"
	"time"
)

// Issue 19: a scenario named ".." passed validation and then `simtrain run
// --out DIR/results` replaced DIR; "." wiped the other results; names of
// 242-255 characters passed and then failed with a raw mkdir error.
func TestParseRejectsNamesThatAreNotOnePathComponent(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{`".."`, "not a name"},
		{`"."`, "not a name"},
		{".results", "must not start with '.'"},
		{strings.Repeat("x", 242), "longer than 239"},
		{strings.Repeat("x", 255), "longer than 239"},
	} {
		_, err := Parse([]byte(strings.Replace(baseScenario, "name: t\n", "name: "+c.name+"\n", 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "name: ") {
			t.Errorf("name %s: got %v, want a name: error containing %q", c.name, err, c.want)
		}
	}
}

// Issue 19: `simtrain run /dev/zero` read until memory ran out.
func TestLoadDevZeroFailsFast(t *testing.T) {
	start := time.Now()
	_, err := Load("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "larger than the 1 MiB") {
		t.Fatalf("got %v", err)
	}
	t.Logf("refused in %v", time.Since(start))
}
