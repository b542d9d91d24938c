// Package network is simtrain's fabric: transfers between endpoints over
// routes of directed links, played in simulated time at one of two
// fidelities.
//
// # Links and transfers
//
// Link l is one direction of a cable, with capacity C_l (bytes/s) and
// latency d_l (propagation plus switching, ns); link ids, capacities and
// latencies come from sim/topology. A transfer moves B bytes along a route
// r = (l_1, ..., l_k) and calls Done when its last byte has arrived. An
// empty route (same endpoint) or B = 0 arrives after Σ d_l over the route
// (zero for the empty route) and occupies no link.
//
// # Analytic fidelity
//
// Each transfer is alone on the network:
//
//	T = Σ_{l∈r} d_l + ⌈B / min_{l∈r} C_l⌉
//
// with the transmission term rounded up to a whole nanosecond. Start
// schedules one engine event per transfer; nothing else is tracked.
//
// # Flow fidelity: max-min fair sharing
//
// A transfer is a flow that occupies every link of its route from its start
// until its last byte is transmitted; it then arrives Σ d_l later (the
// latency is paid once, as with cut-through switching, not per chunk). At
// any instant the active flows F have rates x_f that satisfy
//
//	Σ_{f ∋ l} x_f ≤ C_l   for every link l
//
// and are max-min fair: no rate can be raised without lowering a rate that
// is not larger (Bertsekas & Gallager, Data Networks, 2nd ed., 1992,
// §6.5.2). The allocation is unique and is computed by progressive filling:
// raise every unfixed rate together; when a link fills up, fix the rates of
// its flows at its fair share (capacity left / unfixed flows on it); repeat.
// It is characterised by bottlenecks (same source): a feasible x is
// max-min fair if and only if every flow f has a bottleneck link, one that
// is saturated (Σ x = C_l) and on which no flow is faster than f. This is
// the fluid, flow-level model of SimGrid's LMM solver (Velho, Schnorr,
// Casanova & Legrand, "On the validity of flow-level TCP network models for
// grid and cloud simulations", ACM TOMACS 23(4), 2013; Casanova et al.,
// "Versatile, scalable, and accurate simulation of distributed applications
// and platforms", JPDC 74(10), 2014), without its TCP correction factors:
// simtrain's links carry RDMA and NVLink traffic whose efficiencies belong
// to the hardware profiles in sim/topology and sim/collectives.
//
// # Incremental re-solve
//
// Rates change only when a flow arrives or departs. All arrivals and
// departures at one simulated instant are batched: the first one schedules
// a zero-delay solve event, so a collective that starts a thousand flows at
// once costs one solve. The solve recomputes rates only for flows that can
// change. It rests on one fact about progressive filling: below a level λ,
// the process involves only the links that fill below λ and the flows
// fixed below λ. Hence, for the departures and arrivals of one instant:
//
//  1. Departures. If every departed flow had rate ≥ θD, every flow with
//     rate < θD keeps its rate: no departed flow was fixed below θD, so no
//     link that filled below θD carried one (it would have fixed it), and
//     removing them changes no load below θD.
//  2. Arrivals. An arriving flow g gets x_g ≥ θA = min_{l∈r(g)} C_l / n_l
//     (n_l counting the flows on l with g): below that level no link of g
//     can be full, since it carries at most n_l·λ < C_l. Flows with rate
//     < x_g keep their rates by the argument of 1 run backwards, and so do
//     flows with rate exactly θA: if such a flow's bottleneck carried g, its
//     other n_l − 1 flows (none faster) would add up to at most
//     (n_l − 1)·C_l/n_l < C_l, so it was not saturated.
//  3. Ties with θD. A flow at exactly θD keeps its rate if it has a
//     bottleneck link that gained and lost no flow: that link's load is
//     unchanged up to θD, so it still fills at θD.
//
// Nothing to re-solve (the most common instant). When every changed link
// now carries only flows that arrived at this instant, each alone on it,
// no flow that stays shared a link with a departed or arrived one, so
// every other rate stands, and an arrived flow's rate is the least
// capacity on its route (progressive filling's first fill for a flow
// alone on its links, capacity / 1, to the bit). A collective's ring steps
// over NVLink and the rails are mostly such instants: 96% of the solves of
// the 1,024-GPU Llama 3 70B step and 89% of a 2,048-GPU 405B one
// (BenchmarkFlow in sim/simulation). Tests check, at every such instant of
// the random scenarios, that the local re-solve gives the same flows the
// same rates.
//
// Local re-solve (the usual path otherwise). The re-solved set R starts as the flows
// on the links that gained or lost a flow, less those that 1 and 2 prove
// unchanged. Progressive filling runs on R while every other flow on R's
// links keeps its rate and only reduces its links' capacity (it is
// frozen). The result is checked against the bottleneck characterisation:
// (a) each flow of R is fixed at a link where no frozen flow is faster, and
// (b) each frozen flow on a link whose state got worse (it changed, or was
// saturated and is not, or now carries a faster flow) still has a saturated
// link on which no flow is faster; a link outside R's links is unchanged,
// so its old state answers. Frozen flows that fail join R and the round
// repeats. When both checks pass, every flow has a bottleneck, so the
// allocation is the max-min fair one, whatever R was. Where no frozen flow
// is left on R's links, both hold without looking: (a) has no frozen flow
// to compare with and (b) none to examine, so the round ends without the
// check's pass over R's links (R then holds every flow of its links'
// component: a collective step's or an all-to-all's burst, where the pass
// was a cache miss a link on 16,384 GPUs). addToSet keeps the count of
// frozen entries as R grows. When the earliest and
// fastest flows of a burst leave, 1 freezes every slower flow and R stays
// empty; in the random-traffic benchmark below R averages about 3 flows at
// 10,000 concurrent flows.
//
// Threshold re-solve (the fallback, after 64 local rounds or once the
// rounds have re-solved more flows in total than are active). Flows covered
// by 1–3 are frozen, and the set re-solved is everything reachable from the
// changed links through flows that are not frozen. That set is
// self-contained: its links carry only its flows and frozen ones, and no
// link outside it changed. Re-solving more flows than needed is always
// exact, so θD is widened by a relative 1e-9 towards re-solving
// (floating-point ties). With no flow frozen this is SimGrid's "modified
// set", the connected component of the changed links. Tests run all of
// these ways and compare them with a from-scratch progressive filling after
// every event.
//
// # Time
//
// Each flow keeps its remaining bytes as of the last time its rate changed
// and is advanced lazily, only when its rate changes again; a flow whose
// new rate equals its old one (within a relative 1e-12) keeps its
// completion time untouched. Its completion time is
//
//	t_end = t + ⌈rem / x⌉ ns
//
// where a quotient within a relative 1e-14 above a whole nanosecond counts
// as that nanosecond (floating-point noise must not add a nanosecond to
// times exact on paper). Completion times sit in a heap of buckets, one
// per finish time (a collective's flows finish together; finishQueue), the
// flows of a due instant leave in (finish, seq) order, and the fabric
// keeps a single pending wake event for the earliest;
// moving it earlier bumps a generation counter packed into the event's
// argument, and stale wakes are ignored when they fire. A flow whose time
// has come completes at the next step of the fabric whatever floating-point
// residue its remaining bytes show, and every other flow's t_end is later
// than now, so a flow cannot be starved by rounding and no loop of
// zero-progress events can form. A flow crossing a zero-capacity link gets
// rate 0 and never completes.
//
// # Statistics
//
// Per link: bytes carried and busy time (time with at least one active
// flow; analytic: the union of the transfers' transmission intervals).
// CheckInvariants verifies, among other things, that on every link
// Σ x ≤ C_l·(1+1e-9) and that every active flow has a positive rate unless
// its route has a zero-capacity link.
//
// # Cost
//
// Slabs with free-index stacks for flows and callbacks, the solver's
// per-flow fields in their own dense array, per-link lists of active flows
// with O(1) removal, epoch marks instead of clearing, and no maps: steady
// state allocates nothing. The solver waits on memory more than it
// computes, so its state is laid out for the cache: one 128-byte record
// per link (its flows, capacity, statistics and scratch), a short route
// inside the flow's slot, and a due instant's flows taken from one
// bucket's list rather than sifted out of a heap one by one. A local
// re-solve takes a changed link's flows once however many flows left or
// joined it (an all-to-all puts hundreds on a link at one instant), and
// passes over its links as few times as it can: a round's base is set in
// the pass that fills the share heap, the check is skipped where nothing
// is frozen (above), and the arrival bound (thetaA) is worked out only
// where the first set's test reads it.
// Measured with go test -bench on the project's 2-core machine
// (2026-12-06), on a 16,384-host two-tier fat tree (65,536 links) with
// flows between random hosts: analytic fidelity, about 6.7 million
// transfers/s; flow fidelity with each completion starting a new flow of
// 1–64 MiB, about 1.3 million completed flows/s at 1,000 concurrent flows
// and 165,000–190,000/s at 10,000, 0 allocs/op; a burst of 100,000 equal
// flows started together, about 0.35 s to play out. Exact max-min sharing
// has an inherent cost when changes cascade: at 100,000 concurrent flows
// of random sizes on the same tree, each departure or arrival changes the
// rates of about 500 other flows and costs about 10 ms.
//
// Inputs are trusted: link ids and sizes come from topology code, so Start
// does not validate them (CheckLinks and CheckTransfer do, for callers that
// hold untrusted values).
package network
