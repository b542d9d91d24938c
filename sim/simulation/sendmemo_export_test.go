package simulation

import (
	"fmt"

	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/workload"
)

// SendMemoCounts is what CheckSendMemo compared.
type SendMemoCounts struct {
	// Boundaries: the layout's boundaries priced in each direction;
	// Keyed: those whose share the memo holds (a strided stage);
	// Entries: the memo's shares, each checked against its pairs routed
	// afresh; Contended: those below 1.
	Boundaries, Keyed, Entries, Contended int
}

// CheckSendMemo compares, for s's layout on the cluster r last built, the
// share of every pipeline boundary in both directions as a pricer with r's
// send memo finds it (sendContention: kept by earlier layouts, or found
// and kept now) with what a pricer without one finds on a cluster built
// anew; then every share the memo holds with the share of the pairs its
// key describes, routed afresh on that cluster. A mismatch is a key that
// lets two boundaries (or two clusters) share a share. Zero counts when s
// is not at analytic fidelity (no shares).
func CheckSendMemo(s *scenario.Plan, r *Reuse) (SendMemoCounts, error) {
	var n SendMemoCounts
	if s.Fidelity() != network.Analytic {
		return n, nil
	}
	cl, layout, fcl, err := keptAndFresh(s, r)
	if err != nil {
		return n, err
	}
	dev := workload.DeviceOf(s.GPU())
	memo := r.sendMemo(cl)
	for a := 0; a+1 < layout.PP; a++ {
		for _, d := range [][2]int{{a, a + 1}, {a + 1, a}} {
			n.Boundaries++
			with := newPricer(s, cl, layout, dev) // a pricer per direction: its own tables key both as one
			with.sendMemo = memo
			fresh := newPricer(s, fcl, layout, dev)
			got, want := with.sendContention(d[0], d[1]), fresh.sendContention(d[0], d[1])
			if with.err != nil || fresh.err != nil {
				return n, fmt.Errorf("boundary %v: %v, fresh %v", d, with.err, fresh.err)
			}
			if got != want {
				return n, fmt.Errorf("boundary %v: share %v with the memo, %v fresh", d, got, want)
			}
			step := layout.RankOf(parallel.Coord{PP: d[1]}) - layout.RankOf(parallel.Coord{PP: d[0]})
			if k, ok := stridedKey(layout.StageRanks(d[0]), step); ok {
				if f, kept := memo.get(k); !kept || f != want {
					return n, fmt.Errorf("boundary %v: memo holds %v (%v), want %v", d, f, kept, want)
				}
				n.Keyed++
			}
		}
	}
	if memo == nil {
		return n, nil
	}
	for k, f := range memo.shares {
		n.Entries++
		want, _, err := boundarySendShare(fcl, stridedRanks(k), k.step, [2][][2]int{})
		if err != nil {
			return n, err
		}
		if f != want {
			return n, fmt.Errorf("memo key %+v: share %v, its pairs routed afresh %v", k, f, want)
		}
		if f < 1 {
			n.Contended++
		}
	}
	return n, nil
}
