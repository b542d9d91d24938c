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
// completion heap, whose order holds; no completion is overdue; and
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
	for l, es := range f.links {
		sum := 0.0
		for i, en := range es {
			if en.flow < 0 || int(en.flow) >= len(f.flows) {
				return fmt.Errorf("network: link %d entry %d names flow slot %d, out of range", l, i, en.flow)
			}
			fl, h := &f.flows[en.flow], &f.hot[en.flow]
			if h.state != flowActive {
				return fmt.Errorf("network: link %d lists flow slot %d, which is not active", l, en.flow)
			}
			if int(en.hop) >= len(fl.route) || fl.route[en.hop] != int32(l) || fl.pos[en.hop] != int32(i) {
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
		for k, l := range fl.route {
			if f.bw[l] == 0 {
				zeroLink = true
			}
			es := f.links[l]
			if p := fl.pos[k]; p < 0 || int(p) >= len(es) || es[p] != (entry{int32(i), int32(k)}) {
				return fmt.Errorf("network: flow slot %d hop %d is not listed on link %d", i, k, l)
			}
		}
		if !(h.rate > 0) && !zeroLink {
			return fmt.Errorf("network: flow slot %d has rate %g with no zero-capacity link on its route", i, h.rate)
		}
		if fl.hidx < 0 || int(fl.hidx) >= len(f.fh.items) || f.fh.items[fl.hidx] != int32(i) {
			return fmt.Errorf("network: flow slot %d is missing from the completion heap", i)
		}
		if fl.finish < now {
			return fmt.Errorf("network: flow slot %d should have finished at %v, now is %v", i, fl.finish, now)
		}
	}
	if active != f.nActive || len(f.fh.items) != active {
		return fmt.Errorf("network: %d active flows, counter says %d, completion heap holds %d", active, f.nActive, len(f.fh.items))
	}
	for i := 1; i < len(f.fh.items); i++ {
		if f.fh.less(f.fh.items[i], f.fh.items[(i-1)/2]) {
			return fmt.Errorf("network: completion heap out of order at index %d", i)
		}
	}
	return nil
}
