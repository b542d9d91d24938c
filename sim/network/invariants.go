package network

import "fmt"

// rateSlack is the relative tolerance of the capacity invariant: the rates
// on a link may exceed its capacity by floating-point noise only.
const rateSlack = 1e-9

// CheckInvariants verifies the fabric's state and returns the first
// violation found, or nil. It walks every link and flow (O(links + flows)),
// so it is meant for tests and debugging, not for every event of a run.
//
// Both fidelities: the callback slab holds exactly InFlight() pending
// transfers. Flow fidelity, in addition: on every link the sum of the rates
// of its flows is at most capacity*(1+1e-9); every active flow has a
// positive rate unless a link on its route has zero capacity; every active
// flow is listed on each link of its route (and only there) and in the
// completion queue at its finish, whose heap order and lists hold; no
// completion is overdue; and
// ActiveFlows() counts the active flows.
func (f *Fabric) CheckInvariants() error {
	if n := len(f.dels) - len(f.delFree); n != f.inFlight {
		return fmt.Errorf("network: %d callback slots in use but %d transfers in flight", n, f.inFlight)
	}
	if f.fid != Flow {
		return nil
	}
	if len(f.hot) != len(f.flows) {
		return fmt.Errorf("network: %d flow slots but %d solver slots", len(f.flows), len(f.hot))
	}
	now := f.e.Now()
	for l := range f.lk {
		if f.lk[l].heaped {
			return fmt.Errorf("network: link %d is marked in the fill's heap between fills", l)
		}
		es := f.lk[l].es
		sum := 0.0
		for i, en := range es {
			if en.flow < 0 || int(en.flow) >= len(f.flows) {
				return fmt.Errorf("network: link %d entry %d names flow slot %d, out of range", l, i, en.flow)
			}
			fl, h := &f.flows[en.flow], &f.hot[en.flow]
			if h.state != flowActive {
				return fmt.Errorf("network: link %d lists flow slot %d, which is not active", l, en.flow)
			}
			if hs := fl.hops(); int(en.index()) >= len(hs) || hs[en.index()] != (hop{int32(l), int32(i)}) ||
				(en.hop >= extHop) != (len(hs) > inlineHops) {
				return fmt.Errorf("network: link %d entry %d (flow %d hop %d) disagrees with the flow's route", l, i, en.flow, en.hop)
			}
			sum += h.rate
		}
		if sum > f.bw[l]*(1+rateSlack) {
			return fmt.Errorf("network: link %d carries %g bytes/s, above its capacity %g", l, sum, f.bw[l])
		}
	}
	active := 0
	for i := range f.flows {
		fl, h := &f.flows[i], &f.hot[i]
		if h.state != flowActive {
			continue
		}
		active++
		zeroLink := false
		ext := int32(0)
		if fl.nhop > inlineHops {
			ext = extHop
		}
		for k, hp := range fl.hops() {
			l := hp.link
			if f.bw[l] == 0 {
				zeroLink = true
			}
			es := f.lk[l].es
			if p := hp.pos; p < 0 || int(p) >= len(es) || es[p] != (entry{int32(i), int32(k) + ext}) {
				return fmt.Errorf("network: flow slot %d hop %d is not listed on link %d", i, k, l)
			}
		}
		if !(h.rate > 0) && !zeroLink {
			return fmt.Errorf("network: flow slot %d has rate %g with no zero-capacity link on its route", i, h.rate)
		}
		if fl.finish < now {
			return fmt.Errorf("network: flow slot %d should have finished at %v, now is %v", i, fl.finish, now)
		}
		if at := f.fh.at[i]; at.b < 0 || int(at.b) >= len(f.fh.bk) {
			return fmt.Errorf("network: flow slot %d is missing from the completion heap", i)
		} else if bk := &f.fh.bk[at.b]; bk.finish != fl.finish || at.seq != fl.seq {
			return fmt.Errorf("network: flow slot %d is in the completion heap at %v, its finish is %v", i, bk.finish, fl.finish)
		}
	}
	if active != f.nActive || f.fh.n != active {
		return fmt.Errorf("network: %d active flows, counter says %d, completion heap holds %d", active, f.nActive, f.fh.n)
	}
	if err := f.fh.check(); err != nil {
		return fmt.Errorf("network: completion heap: %v", err)
	}
	return nil
}
