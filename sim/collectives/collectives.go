package collectives

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// Op is a collective operation. Sizes follow nccl-tests' "size" convention:
// all_reduce, broadcast, reduce: the buffer; all_gather: the full output;
// reduce_scatter: the full input; all_to_all: the full send buffer per rank;
// send_recv: bytes each rank sends to the next; send: bytes Ranks[0] sends to
// Ranks[1].
type Op uint8

const (
	AllReduce Op = iota
	AllGather
	ReduceScatter
	AllToAll
	Broadcast
	Reduce
	SendRecv
	Send
	numOps
)

var opNames = [numOps]string{"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv", "send"}

// String returns the op's name as ParseOp accepts it.
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// OpNames lists the valid op names in declaration order.
func OpNames() []string { return slices.Clone(opNames[:]) }

// ParseOp parses an op name; the error lists the valid names.
func ParseOp(s string) (Op, error) {
	for i, n := range opNames {
		if s == n {
			return Op(i), nil
		}
	}
	return 0, fmt.Errorf("unknown op %q (valid: %s)", s, strings.Join(opNames[:], ", "))
}

// Algo is an algorithm choice.
type Algo uint8

const (
	Auto Algo = iota
	Ring
	Tree // double binary tree
	NVLS
	Hierarchical
	Direct // pairwise all-to-all / point-to-point
	numAlgos
)

var algoNames = [numAlgos]string{"auto", "ring", "tree", "nvls", "hierarchical", "direct"}

// String returns the algorithm's name as ParseAlgo accepts it.
func (a Algo) String() string {
	if a < numAlgos {
		return algoNames[a]
	}
	return fmt.Sprintf("Algo(%d)", uint8(a))
}

// AlgoNames lists the valid algorithm names in declaration order.
func AlgoNames() []string { return slices.Clone(algoNames[:]) }

// ParseAlgo parses an algorithm name; the error lists the valid names.
func ParseAlgo(s string) (Algo, error) {
	for i, n := range algoNames {
		if s == n {
			return Algo(i), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (valid: %s)", s, strings.Join(algoNames[:], ", "))
}

// Proto is an NCCL protocol (hardware-facts §3a).
type Proto uint8

const (
	LL     Proto = iota // 8-byte stores carrying 4 data bytes and a flag
	LL128               // 128-byte lines carrying 120 data bytes
	Simple              // bulk copies with fences
)

// String returns NCCL's name for the protocol.
func (p Proto) String() string {
	switch p {
	case LL:
		return "LL"
	case LL128:
		return "LL128"
	case Simple:
		return "Simple"
	}
	return fmt.Sprintf("Proto(%d)", uint8(p))
}

// Group is a set of GPU ranks on a cluster with its shape analysed once
// (domains spanned, ranks per domain, bottleneck bandwidths). Immutable after
// NewGroup, so safe to reuse and to share between goroutines.
type Group struct {
	c     *topology.Cluster
	ranks []int // as given (ring order for send_recv, Ranks[0]→Ranks[1] for send)
	arrangement
	rail  bool  // every domain holds the same local indices (rail-aligned)
	sh    shape // uncontended shape
	share Share // contention share of the analytic costs (WithShare)
}

// arrangement is a group's ranks ordered by scale-up domain.
type arrangement struct {
	order  []int32 // ranks grouped by domain, in rank order inside each
	domOff []int32 // domain i's ranks are order[domOff[i]:domOff[i+1]]
}

// domains is the number of scale-up domains spanned.
func (a *arrangement) domains() int { return len(a.domOff) - 1 }

// Ranks returns a copy of the group's ranks in the order given to NewGroup.
func (g *Group) Ranks() []int { return slices.Clone(g.ranks) }

// Size is the number of ranks.
func (g *Group) Size() int { return len(g.ranks) }

// Domains is the number of scale-up domains the group spans.
func (g *Group) Domains() int { return g.sh.domains }

// RanksPerDomain returns the fewest and most ranks the group has in one of
// its domains.
func (g *Group) RanksPerDomain() (fewest, most int) { return g.sh.ppnMin, g.sh.ppnMax }

// RailAligned reports whether every domain of the group holds GPUs with the
// same local indices, so traffic between domains can stay on rails.
func (g *Group) RailAligned() bool { return g.rail }

// Bandwidths returns the achievable per-GPU bandwidths the closed form uses,
// bytes/s: ring inside a domain, point-to-point inside a domain, NVLS per
// port (0 without NVLS) and scale-out per GPU.
func (g *Group) Bandwidths() (ring, p2p, nvls, net float64) {
	return g.sh.intraBW, g.sh.p2pBW, g.sh.nvlsBW, g.sh.netBW
}

// Cost is the closed-form prediction for one collective.
type Cost struct {
	Time  engine.Time
	Algo  Algo                 // the algorithm used (resolved when Auto was asked)
	Proto Proto                // the NCCL protocol used
	AlgBW units.BytesPerSecond // nccl-tests definition (0 when Time is 0)
	BusBW units.BytesPerSecond // nccl-tests definition (0 when Time is 0)
}

// candidates lists the algorithm kinds considered for op with algorithm a on
// a group of shape s, in NCCL's tie-break order (tree before ring before
// NVLS). Auto never includes hierarchical or direct for reductions (NCCL has
// neither).
func (s *shape) candidates(op Op, a Algo) (ks [2]kind, n int) {
	nvlsKind := kNVLS
	if s.domains > 1 {
		nvlsKind = kNVLSTree
	}
	switch op {
	case AllReduce:
		switch a {
		case Auto:
			return [2]kind{kTree, kRing}, 2 // NVLS added by the caller
		case Ring:
			return [2]kind{kRing}, 1
		case Tree:
			return [2]kind{kTree}, 1
		case NVLS:
			return [2]kind{nvlsKind}, 1
		case Hierarchical:
			return [2]kind{kHier}, 1
		}
	case AllGather, ReduceScatter:
		switch a {
		case Auto, Ring:
			return [2]kind{kRing}, 1
		case NVLS:
			return [2]kind{kNVLS}, 1
		case Hierarchical:
			return [2]kind{kHier}, 1
		}
	case Broadcast, Reduce:
		if a == Auto || a == Ring {
			return [2]kind{kRing}, 1
		}
	case AllToAll, SendRecv, Send:
		if a == Auto || a == Direct {
			return [2]kind{kDirect}, 1
		}
	}
	return ks, 0
}

// validAlgos lists the algorithm names accepted for op on this group.
func (g *Group) validAlgos(op Op) string {
	var out []string
	for a := Auto; a < numAlgos; a++ {
		if _, st := g.pick(op, a, 1<<20); st == pickOK {
			out = append(out, a.String())
		}
	}
	return strings.Join(out, ", ")
}

// pick outcomes.
const (
	pickOK          = iota
	pickNotApplied  // the algorithm does not implement op
	pickUnavailable // it does, but not on this group or hardware
)

// pick returns the fastest allowed (algorithm, protocol) for op; op, a and
// bytes must be valid.
func (g *Group) pick(op Op, a Algo, bytes float64) (est, int) {
	s := &g.sh
	ks, nk := s.candidates(op, a)
	if nk == 0 {
		return est{}, pickNotApplied
	}
	if s.n < 2 || bytes == 0 {
		// One rank or nothing to move: nothing happens on the wire.
		k := ks[0]
		if a == Auto && k == kTree {
			k = kRing
		}
		return est{kind: k, proto: Simple}, pickOK
	}
	var best est
	found := false
	consider := func(e est, ok bool) {
		if ok && (!found || e.t < best.t) {
			best, found = e, true
		}
	}
	for _, k := range ks[:nk] {
		if k == kHier {
			consider(s.hier(op, bytes))
			continue
		}
		for p := LL; p <= Simple; p++ {
			consider(s.eval(op, k, p, bytes))
		}
	}
	if a == Auto {
		if op == AllReduce {
			consider(s.allPairs(bytes)) // RCCL only (MSCCL picks it before NCCL's tuning model)
		}
		switch {
		case op == AllReduce && s.domains > 1:
			consider(s.nvlsTree(bytes))
		case op == AllReduce, op == AllGather, op == ReduceScatter:
			consider(s.nvls(op, bytes))
		}
	}
	if !found {
		return est{}, pickUnavailable
	}
	return best, pickOK
}

// estimate validates the arguments and picks the algorithm and protocol.
func (g *Group) estimate(op Op, a Algo, bytes float64) (est, error) {
	if op >= numOps {
		return est{}, fmt.Errorf("collectives: unknown op %d (valid: %s)", op, strings.Join(opNames[:], ", "))
	}
	if a >= numAlgos {
		return est{}, fmt.Errorf("collectives: unknown algorithm %d (valid: %s)", a, strings.Join(algoNames[:], ", "))
	}
	if math.IsNaN(bytes) || math.IsInf(bytes, 0) || bytes < 0 {
		return est{}, fmt.Errorf("collectives: bytes must be finite and >= 0, got %v", bytes)
	}
	if op == Send && g.sh.n < 2 {
		return est{}, fmt.Errorf("collectives: send needs 2 ranks, the group has %d", g.sh.n)
	}
	e, st := g.pick(op, a, bytes)
	switch st {
	case pickNotApplied:
		return est{}, fmt.Errorf("collectives: algorithm %s does not apply to %s (valid: %s)", a, op, g.validAlgos(op))
	case pickUnavailable:
		return est{}, g.unavailable(op, a)
	}
	if s, ok := g.contended(e.kind); ok && g.sh.n >= 2 && bytes > 0 {
		// NCCL chose on the fabric it models (uncontended); the choice
		// runs at the contended rate.
		var c est
		if e.kind == kHier {
			c, ok = s.hier(op, bytes)
		} else {
			c, ok = s.eval(op, e.kind, e.proto, bytes)
		}
		if ok {
			e = c
		}
	}
	return e, nil
}

// unavailable explains why an explicitly requested algorithm cannot run.
func (g *Group) unavailable(op Op, a Algo) error {
	s := &g.sh
	var why string
	switch a {
	case NVLS:
		switch {
		case s.nvlsBW <= 0:
			why = "the GPU has no NVLink SHARP in this cluster"
			if g.c != nil {
				why = fmt.Sprintf("%s has no NVLink SHARP in this cluster", g.c.GPU.Name)
			}
		case s.domains > 1 && s.ppnMin < 2:
			why = "NVLS across domains needs at least 2 ranks in every domain"
		case op != AllReduce && s.domains > 1:
			why = "NVLS all_gather/reduce_scatter needs the group inside one NVLink domain"
		default:
			why = fmt.Sprintf("NVLS %s supports at most %d ranks", op, maxNVLSArity)
		}
	case Hierarchical:
		why = "hierarchical needs the same number of ranks in every domain"
	default:
		why = "no usable bandwidth on this group's links"
	}
	return fmt.Errorf("collectives: algorithm %s unavailable for %s: %s (valid: %s)", a, op, why, g.validAlgos(op))
}

// Cost predicts op on g moving bytes (nccl-tests size convention). With
// Auto it returns the fastest allowed algorithm and protocol, as NCCL's
// tuner does (hardware-facts §3f). It allocates nothing unless it fails.
// Zero bytes or a one-rank group cost nothing. Errors: unknown op or
// algorithm, an algorithm that does not apply (the error lists the valid
// ones), bytes negative or not finite.
func (g *Group) Cost(op Op, algo Algo, size units.Bytes) (Cost, error) {
	bytes := float64(size)
	e, err := g.estimate(op, algo, bytes)
	if err != nil {
		return Cost{}, err
	}
	return g.toCost(op, e, bytes), nil
}

// BusFactor is nccl-tests' busbw/algbw ratio for op on n ranks
// (hardware-facts §1): 2(n-1)/n for all_reduce; (n-1)/n for all_gather,
// reduce_scatter and all_to_all; 1 otherwise.
func BusFactor(op Op, n int) float64 { return busFactor(op, n) }

func (g *Group) toCost(op Op, e est, bytes float64) Cost {
	c := Cost{Time: engine.Seconds(e.t), Algo: e.kind.algo(), Proto: e.proto}
	if c.Time > 0 {
		c.AlgBW = units.BytesPerSecond(bytes / c.Time.Seconds())
		c.BusBW = c.AlgBW * units.BytesPerSecond(busFactor(op, g.sh.n))
	}
	return c
}
