package report

import (
	"fmt"
	"strconv"

	"github.com/simtrain/simtrain/sim/simulation"
)

// AutoLinksMax is the most directed links a cluster may have for
// links.arrow to be written under sim.links: auto (simtrain run --links
// auto, the default): 2^18 = 262,144. links.arrow has one row per link, so
// its traffic reconstruction and its file grow with the cluster (1,441,792
// links, 97 MB and most of the run's CPU time at 131,072 H100s; issue 18)
// while every other output grows with the model and the layout; every
// bundled scenario lies under it (the 16,384-GPU ones have 180,416 links).
// A variable so that tests can lower it.
var AutoLinksMax = 1 << 18

// LinksSkipped says why a run under policy (scenario.LinksNames) on a
// cluster of links directed links writes no links.arrow, "" when it writes
// one: "off" never does, "full" always does, "auto" does up to
// AutoLinksMax links. An unknown policy writes it (the scenario resolver
// rejects one before a run).
func LinksSkipped(policy string, links int) string {
	switch policy {
	case "off":
		return "sim.links is off; --links full writes one row per link"
	case "auto", "":
		if links > AutoLinksMax {
			return fmt.Sprintf("%s links > %s; --links full writes one row per link",
				grouped(links), grouped(AutoLinksMax))
		}
	}
	return ""
}

// RunLinksSkipped is LinksSkipped for a run: its scenario's sim.links and
// its cluster's links.
func RunLinksSkipped(r *simulation.Result) string {
	return LinksSkipped(r.Scenario.LinksPolicy(), r.Cluster.NumLinks())
}

// grouped writes n (not negative) with a comma every three digits
// (1,443,168), as the CLI prints counts (sim/report does not import the
// CLI's number formats; docs/design.md, "Packages").
func grouped(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
