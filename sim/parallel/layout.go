// Package parallel turns a parallel layout into work: the rank ↔ coordinate
// mapping and process groups, the layer partition over pipeline stages, the
// pipeline schedules, and the per-rank task graph of one training step with
// its overlap rules, played on the engine by an executor.
//
// # Rank layout
//
// The world of tp·cp·dp·pp ranks is a mixed-radix number whose digits are the
// coordinates in parallel.order, innermost first (default tp-cp-ep-dp-pp, as
// Megatron-LM's RankGenerator): with that order rank = tp + TP·(cp + CP·(dp +
// DP·pp)), so a tensor-parallel group is TP consecutive GPUs and stays inside
// a node. Expert parallelism is carved out of the data×context dimensions
// (Megatron-core's expert layout): the flattened (cp, dp) index, taken in the
// order cp and dp appear, is split into an inner EP digit and an outer
// expert-data-parallel digit when ep precedes dp in the order (the default),
// or the other way round otherwise. GPU rank r is the r-th GPU counted node by
// node, so the order decides which groups share a node.
package parallel

import (
	"fmt"
	"strings"
)

// Dim is a parallel dimension.
type Dim uint8

const (
	DimTP Dim = iota
	DimCP
	DimEP
	DimDP
	DimPP
	numDims
)

var dimNames = [numDims]string{"tp", "cp", "ep", "dp", "pp"}

func (d Dim) String() string { return dimNames[d] }

// GroupKind is a kind of process group; each has its own communication stream.
type GroupKind uint8

const (
	GroupTP  GroupKind = iota // tensor (and sequence) parallel
	GroupCP                   // context parallel
	GroupEP                   // expert parallel (all-to-all)
	GroupDP                   // data parallel over dp×cp ranks (dense gradients, ZeRO/FSDP)
	GroupPP                   // pipeline neighbours (send/recv)
	GroupEDP                  // expert data parallel: dp·cp/ep ranks holding the same experts
	NumGroupKinds
)

var groupNames = [NumGroupKinds]string{"tp", "cp", "ep", "dp", "pp", "edp"}

func (g GroupKind) String() string { return groupNames[g] }

// Layout is a validated parallel layout.
type Layout struct {
	TP, CP, EP, DP, PP int
	Order              [5]Dim // innermost first, a permutation of all five dims
	// strides of tp, cp, dp, pp in the rank number (ep is not a rank digit)
	stride [numDims]int
}

// ParseOrder parses "tp-cp-ep-dp-pp" style orders.
func ParseOrder(s string) ([5]Dim, error) {
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

// NewLayout checks the sizes and builds the rank mapping.
func NewLayout(tp, cp, ep, dp, pp int, order [5]Dim) (*Layout, error) {
	for _, v := range []struct {
		name string
		n    int
	}{{"tp", tp}, {"cp", cp}, {"ep", ep}, {"dp", dp}, {"pp", pp}} {
		if v.n < 1 {
			return nil, fmt.Errorf("parallel.%s: must be >= 1, got %d", v.name, v.n)
		}
	}
	if (dp*cp)%ep != 0 {
		return nil, fmt.Errorf("parallel.ep: %d does not divide dp*cp = %d", ep, dp*cp)
	}
	l := &Layout{TP: tp, CP: cp, EP: ep, DP: dp, PP: pp, Order: order}
	stride := 1
	for _, d := range order {
		if d == DimEP {
			continue
		}
		l.stride[d] = stride
		stride *= l.size(d)
	}
	return l, nil
}

func (l *Layout) size(d Dim) int {
	switch d {
	case DimTP:
		return l.TP
	case DimCP:
		return l.CP
	case DimEP:
		return l.EP
	case DimDP:
		return l.DP
	}
	return l.PP
}

// World is the number of ranks.
func (l *Layout) World() int { return l.TP * l.CP * l.DP * l.PP }

// Coord is a rank's position in the layout.
type Coord struct{ TP, CP, DP, PP int }

// CoordOf returns rank's coordinates.
func (l *Layout) CoordOf(rank int) Coord {
	return Coord{
		TP: rank / l.stride[DimTP] % l.TP,
		CP: rank / l.stride[DimCP] % l.CP,
		DP: rank / l.stride[DimDP] % l.DP,
		PP: rank / l.stride[DimPP] % l.PP,
	}
}

// RankOf returns the rank at c.
func (l *Layout) RankOf(c Coord) int {
	return c.TP*l.stride[DimTP] + c.CP*l.stride[DimCP] + c.DP*l.stride[DimDP] + c.PP*l.stride[DimPP]
}

// dataIndex flattens (cp, dp) in the order the two appear in Order.
func (l *Layout) dataIndex(c Coord) int {
	if l.cpBeforeDP() {
		return c.CP + l.CP*c.DP
	}
	return c.DP + l.DP*c.CP
}

func (l *Layout) fromDataIndex(c Coord, i int) Coord {
	if l.cpBeforeDP() {
		c.CP, c.DP = i%l.CP, i/l.CP
	} else {
		c.DP, c.CP = i%l.DP, i/l.DP
	}
	return c
}

func (l *Layout) pos(d Dim) int {
	for i, o := range l.Order {
		if o == d {
			return i
		}
	}
	return -1
}

func (l *Layout) cpBeforeDP() bool { return l.pos(DimCP) < l.pos(DimDP) }

// epInner reports whether the EP digit is the inner part of the (cp, dp) index.
func (l *Layout) epInner() bool { return l.pos(DimEP) < l.pos(DimDP) }

// Group returns the ranks of the kind-k group that contains rank, in ring
// order (ascending coordinate). For GroupPP it is the pipeline of the rank.
func (l *Layout) Group(k GroupKind, rank int) []int {
	c := l.CoordOf(rank)
	var out []int
	switch k {
	case GroupTP:
		for i := 0; i < l.TP; i++ {
			c.TP = i
			out = append(out, l.RankOf(c))
		}
	case GroupCP:
		for i := 0; i < l.CP; i++ {
			c.CP = i
			out = append(out, l.RankOf(c))
		}
	case GroupPP:
		for i := 0; i < l.PP; i++ {
			c.PP = i
			out = append(out, l.RankOf(c))
		}
	case GroupDP:
		for i := 0; i < l.CP*l.DP; i++ {
			out = append(out, l.RankOf(l.fromDataIndex(c, i)))
		}
	case GroupEP, GroupEDP:
		n := l.CP * l.DP
		edp := n / l.EP
		di := l.dataIndex(c)
		var epIdx, edpIdx int
		if l.epInner() {
			epIdx, edpIdx = di%l.EP, di/l.EP
		} else {
			edpIdx, epIdx = di%edp, di/edp
		}
		_ = epIdx
		if k == GroupEP {
			for i := 0; i < l.EP; i++ {
				out = append(out, l.RankOf(l.fromDataIndex(c, l.joinData(i, edpIdx, edp))))
			}
		} else {
			for j := 0; j < edp; j++ {
				out = append(out, l.RankOf(l.fromDataIndex(c, l.joinData(epIdx, j, edp))))
			}
		}
	}
	return out
}

func (l *Layout) joinData(ep, edp, edpSize int) int {
	if l.epInner() {
		return ep + l.EP*edp
	}
	return edp + edpSize*ep
}

// GroupSize is the number of ranks in a kind-k group.
func (l *Layout) GroupSize(k GroupKind) int {
	switch k {
	case GroupTP:
		return l.TP
	case GroupCP:
		return l.CP
	case GroupEP:
		return l.EP
	case GroupDP:
		return l.DP * l.CP
	case GroupPP:
		return l.PP
	case GroupEDP:
		return l.DP * l.CP / l.EP
	}
	return 0
}

// Groups lists every kind-k group once, ordered by its smallest rank. For
// stage >= 0 only groups of that pipeline stage are listed.
func (l *Layout) Groups(k GroupKind, stage int) [][]int {
	seen := make([]bool, l.World())
	var out [][]int
	for r := 0; r < l.World(); r++ {
		if seen[r] || (stage >= 0 && k != GroupPP && l.CoordOf(r).PP != stage) {
			continue
		}
		g := l.Group(k, r)
		for _, m := range g {
			seen[m] = true
		}
		out = append(out, g)
	}
	return out
}
