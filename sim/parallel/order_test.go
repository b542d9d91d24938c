package parallel

import (
	"fmt"
	"strings"
	"testing"
)

// parseOrderBySplit is ParseOrder as it was, by strings.Split.
func parseOrderBySplit(s string) ([5]Dim, error) {
	var out [5]Dim
	parts := strings.Split(s, "-")
	if len(parts) != 5 {
		return out, fmt.Errorf("parallel.order: %q must list tp, cp, ep, dp and pp once each, innermost first (e.g. tp-cp-ep-dp-pp)", s)
	}
	seen := [numDims]bool{}
	for i, p := range parts {
		found := false
		for d := Dim(0); d < numDims; d++ {
			if dimNames[d] == p {
				if seen[d] {
					return out, fmt.Errorf("parallel.order: %q lists %s twice", s, p)
				}
				seen[d], out[i], found = true, d, true
			}
		}
		if !found {
			return out, fmt.Errorf("parallel.order: unknown dimension %q in %q (valid: tp, cp, ep, dp, pp)", p, s)
		}
	}
	return out, nil
}

// TestParseOrderEqualsSplit: ParseOrder, cutting the parts off one by
// one, gives the order and the error text the strings.Split version gave.
func TestParseOrderEqualsSplit(t *testing.T) {
	for _, s := range []string{"tp-cp-ep-dp-pp", "pp-dp-ep-cp-tp", "dp-tp-cp-ep-pp", "", "-", "----", "-----",
		"tp-cp-ep-dp", "tp-cp-ep-dp-pp-", "-tp-cp-ep-dp", "tp--cp-ep-dp", "tp-tp-ep-dp-pp", "tp-cp-ep-dp-xx",
		"tp-cp-ep-dp-pp-tp", "TP-cp-ep-dp-pp", "tp-cp-ep-dp-pp\n"} {
		got, gotErr := ParseOrder(s)
		want, wantErr := parseOrderBySplit(s)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%q: %v, %v; by Split %v, %v", s, got, gotErr, want, wantErr)
		}
	}
}
