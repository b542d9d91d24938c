// Package parallel turns a parallel layout into work: the rank ↔ coordinate
// mapping and process groups, the layer partition over a pipeline
// schedule's placement of model chunks (Place), and the per-rank task graph
// of one training step with its overlap rules, played on the engine by an
// executor. The schedules themselves — placement, per-stage order,
// micro-batches in flight — are sim/pipeline's.
//
// # Task graph
//
// The builder walks each stage's pipeline order. Each step is a chunk
// pass (passes.go): one micro-batch's forward or backward through one
// chunk, issued as its pipeline receive and embedding or output layer,
// then each block of each layer, then its output layer or embedding and
// pipeline send. A layer's blocks are emitters chosen once per layer from
// the recipe: in the forward the attention (plain, context-parallel, or
// with its TP collectives paired with its GEMMs) and the dense MLP or the
// MoE router, experts and combine; in the backward the recomputation by
// policy (full, per-op selective, selective), the MLP or MoE blocks, and
// the attention by context-parallel implementation. A pass issued alone
// emits its blocks in sequence; a DualPipe forward marked Overlap and the
// backward after it are issued together, switching to the other pass
// after a block that issues a collective, so that each pass's
// communication runs under the other's computation (runOverlapped).
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
//
// # MoE parallel folding (expert TP < TP)
//
// With an expert tensor-parallel size ETP below TP (Liu et al. 2025, "MoE
// Parallel Folding", arXiv:2504.14960; Megatron-LM
// --expert-tensor-parallel-size) the MoE layers use their own layout over
// the same GPUs: ETP×EP×EDP per pipeline stage with ETP·EP·EDP = TP·CP·DP.
// The expert coordinates follow Megatron-Core's expert rank generator
// (megatron/core/parallel_state.py, initialize_model_parallel at
// NVIDIA/Megatron-LM d98e8a6: RankGenerator(tp=ETP, ep=EP, dp=EDP, cp=1,
// pp=PP) over the same order string): the rank number is re-read as a
// mixed-radix number whose digits are etp, ep and edp in the positions tp,
// ep and dp hold in parallel.order (cp has size 1 there), with pp outermost
// — by default etp innermost, then ep, then edp. An EP group therefore spans
// TP ranks as well as CP×DP ranks (TP2 DP16 EP32 ETP1: one EP group of the
// stage's 32 GPUs). Folding needs pp last in the order (Megatron asserts the
// expert and dense pipeline groups agree; with pp last they always do).
package parallel

import (
	"fmt"
	"slices"
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
	GroupEDP                  // expert data parallel: tp·cp·dp/(etp·ep) ranks holding the same expert shards
	GroupETP                  // expert tensor parallel: the etp ranks splitting each expert (the TP group unless folded)
	NumGroupKinds
)

var groupNames = [NumGroupKinds]string{"tp", "cp", "ep", "dp", "pp", "edp", "etp"}

func (g GroupKind) String() string { return groupNames[g] }

// Layout is a validated parallel layout.
type Layout struct {
	TP, CP, EP, DP, PP int
	// ETP is the expert tensor-parallel size: TP (no folding) or a proper
	// divisor of it (MoE parallel folding, see the package comment).
	ETP   int
	Order [5]Dim // innermost first, a permutation of all five dims
	// strides of tp, cp, dp, pp in the rank number (ep is not a rank digit)
	stride [numDims]int
	// folded layouts: strides of the expert digits etp (DimTP), ep (DimEP)
	// and edp (DimDP) in the rank's index within its pipeline stage
	estride [numDims]int
}

// ParseOrder parses "tp-cp-ep-dp-pp" style orders. It cuts the parts off
// one by one (the parts strings.Split gives, without its slice: every
// resolved plan parses its order).
func ParseOrder(s string) ([5]Dim, error) {
	var out [5]Dim
	if strings.Count(s, "-") != 4 {
		return out, fmt.Errorf("parallel.order: %q must list tp, cp, ep, dp and pp once each, innermost first (e.g. tp-cp-ep-dp-pp)", s)
	}
	seen := [numDims]bool{}
	rest := s
	for i := range out {
		var p string
		p, rest, _ = strings.Cut(rest, "-")
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

// NewLayout checks the sizes and builds the rank mapping, with expert
// tensor parallelism equal to tp (no folding).
func NewLayout(tp, cp, ep, dp, pp int, order [5]Dim) (*Layout, error) {
	return NewFoldedLayout(tp, tp, cp, ep, dp, pp, order)
}

// NewFoldedLayout is NewLayout with an expert tensor-parallel size etp: tp
// gives NewLayout's layout; a proper divisor of tp folds the expert groups
// over the TP×CP×DP ranks of each pipeline stage (package comment), which
// needs ep·etp to divide tp·cp·dp and pp last in order. ETP > TP, which
// Megatron-Core allows in principle, is not supported.
func NewFoldedLayout(tp, etp, cp, ep, dp, pp int, order [5]Dim) (*Layout, error) {
	for _, v := range []struct {
		name string
		n    int
	}{{"tp", tp}, {"cp", cp}, {"ep", ep}, {"dp", dp}, {"pp", pp}, {"expert_tp", etp}} {
		if v.n < 1 {
			return nil, fmt.Errorf("parallel.%s: must be >= 1, got %d", v.name, v.n)
		}
	}
	if tp%etp != 0 {
		return nil, fmt.Errorf("parallel.expert_tp: %d must divide tp %d (valid: divisors of tp; expert_tp > tp is not supported)", etp, tp)
	}
	if etp == tp {
		if (dp*cp)%ep != 0 {
			return nil, fmt.Errorf("parallel.ep: %d does not divide dp*cp = %d", ep, dp*cp)
		}
	} else {
		if (tp*cp*dp)%(ep*etp) != 0 {
			return nil, fmt.Errorf("parallel.ep: ep*expert_tp = %d*%d does not divide tp*cp*dp = %d", ep, etp, tp*cp*dp)
		}
		if order[4] != DimPP {
			return nil, fmt.Errorf("parallel.order: expert_tp %d < tp %d (MoE parallel folding) needs pp last in the order, got %s", etp, tp, orderString(order))
		}
	}
	l := &Layout{TP: tp, CP: cp, EP: ep, DP: dp, PP: pp, ETP: etp, Order: order}
	stride := 1
	for _, d := range order {
		if d == DimEP {
			continue
		}
		l.stride[d] = stride
		stride *= l.size(d)
	}
	if l.Folded() {
		es := 1
		for _, d := range order {
			switch d {
			case DimTP, DimEP, DimDP:
				l.estride[d] = es
				es *= l.expertSize(d)
			}
		}
	}
	return l, nil
}

func orderString(order [5]Dim) string {
	parts := make([]string, len(order))
	for i, d := range order {
		parts[i] = d.String()
	}
	return strings.Join(parts, "-")
}

// Folded reports whether the MoE layers use their own layout (ETP < TP).
func (l *Layout) Folded() bool { return l.ETP > 0 && l.ETP < l.TP }

// etp is ETP, or TP for a Layout built without a constructor.
func (l *Layout) etp() int {
	if l.ETP <= 0 {
		return l.TP
	}
	return l.ETP
}

// EDP is the expert data-parallel size: TP·CP·DP/(ETP·EP) ranks of a
// pipeline stage hold the same expert shard (DP·CP/EP without folding).
func (l *Layout) EDP() int {
	if !l.Folded() {
		return l.DP * l.CP / l.EP
	}
	return l.TP * l.CP * l.DP / (l.ETP * l.EP)
}

// expertSize is the radix of the folded expert digit standing in d's place.
func (l *Layout) expertSize(d Dim) int {
	switch d {
	case DimTP:
		return l.etp()
	case DimEP:
		return l.EP
	case DimDP:
		return l.EDP()
	}
	return 1
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
	return l.appendGroup(make([]int, 0, l.GroupSize(k)), k, rank)
}

// appendGroup appends Group(k, rank) to out.
func (l *Layout) appendGroup(out []int, k GroupKind, rank int) []int {
	if k == GroupETP && !l.Folded() {
		k = GroupTP
	}
	if l.Folded() && (k == GroupEP || k == GroupEDP || k == GroupETP) {
		return l.appendFoldedGroup(out, k, rank)
	}
	c := l.CoordOf(rank)
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

// appendFoldedGroup appends an expert group of a folded layout: the ranks of rank's
// pipeline stage that share every expert digit but the one k varies (etp for
// GroupETP, ep for GroupEP, edp for GroupEDP), in ascending digit order.
func (l *Layout) appendFoldedGroup(out []int, k GroupKind, rank int) []int {
	d := DimDP
	switch k {
	case GroupETP:
		d = DimTP
	case GroupEP:
		d = DimEP
	}
	n, st := l.expertSize(d), l.estride[d]
	stageSize := l.TP * l.CP * l.DP // pp is the outermost digit
	base, local := rank-rank%stageSize, rank%stageSize
	local -= (local / st % n) * st
	for i := range n {
		out = append(out, base+local+i*st)
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
		return l.EDP()
	case GroupETP:
		return l.etp()
	}
	return 0
}

// StageRanks returns the ranks of pipeline stage stage in ascending order
// (the order a scan of every rank meets them), without visiting the other
// stages' ranks: a stage holds 1/PP of the world. Nil for a stage outside
// [0, PP).
func (l *Layout) StageRanks(stage int) []int {
	if stage < 0 || stage >= l.PP {
		return nil
	}
	size := l.TP * l.CP * l.DP
	ranks := make([]int, size)
	if l.stride[DimPP] == size {
		// pp is the outermost digit (the usual order): the stage is the
		// size ranks from stage·size on.
		for i := range ranks {
			ranks[i] = stage*size + i
		}
		return ranks
	}
	for i := range ranks {
		ranks[i] = l.RankOf(Coord{TP: i % l.TP, CP: i / l.TP % l.CP, DP: i / (l.TP * l.CP), PP: stage})
	}
	slices.Sort(ranks)
	return ranks
}

// ListedAs returns the group kind whose groups are k's, rank for rank and in
// the same order (Group, Groups): k itself, or, without folding, GroupTP for
// GroupETP (the expert groups are the tensor-parallel ones) and, with ep 1,
// GroupDP for GroupEDP (the expert data-parallel index is the whole (cp, dp)
// index). A caller that keeps groups by kind (the simulation's pricer: its
// interference spans ask for every kind of every stage) lists and prices
// such a pair once; TestListedAsListsTheSame holds the equalities.
func (l *Layout) ListedAs(k GroupKind) GroupKind {
	if l.Folded() {
		return k
	}
	switch {
	case k == GroupETP:
		return GroupTP
	case k == GroupEDP && l.EP == 1:
		return GroupDP
	}
	return k
}

// Groups lists every kind-k group once, ordered by its smallest rank. For
// stage >= 0 only groups of that pipeline stage are listed.
//
// With a stage it walks only that stage's ranks (a group of any kind but
// GroupPP lies inside one stage), so listing every stage's groups costs the
// world once, not once per stage.
func (l *Layout) Groups(k GroupKind, stage int) [][]int {
	var out [][]int
	if stage < 0 || k == GroupPP {
		seen := make([]bool, l.World())
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
	if stage >= l.PP {
		return nil
	}
	// seen is indexed by a rank's position inside its stage. The stage's
	// groups of one kind partition its ranks, so they are cut from one
	// array of the stage's size (two allocations, not one per group; a
	// 131,072-GPU stage has 8,192 ranks).
	//
	// The stage's ranks are walked in rank order. When pp is the outermost
	// digit they are the n ranks from stage·n on, walked without listing
	// them: StageRanks' list was garbage a call, and a sweep's pricer asks
	// for every kind of every stage each run, so, with its collector
	// seldom running, ≈ 200 fresh pages of the 1,000-point 70B sweep
	// (docs/design.md "Speed", foot36).
	//
	// A rank's place in seen is any one-to-one map of the stage's ranks
	// onto [0, n): r − stage·n when pp is the outermost digit (no
	// division), else its coordinates flattened (CoordOf's four).
	n := l.TP * l.CP * l.DP
	var ranks []int // nil: the n ranks from stage·n on
	if l.stride[DimPP] != n {
		ranks = l.StageRanks(stage)
	}
	size := l.GroupSize(k)
	return l.stageGroups(k, stage, ranks, make([][]int, 0, n/max(1, size)), make([]int, 0, n), make([]bool, n))
}

// GroupStore is storage that GroupsInto cuts group lists from, kept by a
// caller from one listing to the next (a sweep worker's pricer: point
// after point). Reset hands all of it back; the zero value is ready.
type GroupStore struct {
	ranks []int   // the groups' ranks: [:used] handed out since Reset
	lists [][]int // the lists of groups: [:nlists] handed out since Reset
	seen  []bool  // scratch, all false between listings
	used  int     // ranks handed out
	nlist int     // lists handed out
}

// Reset makes every list GroupsInto returned since the last Reset invalid
// (their storage is handed out again).
func (s *GroupStore) Reset() { s.used, s.nlist = 0, 0 }

// GroupsInto is Groups(k, stage), the lists of a stage's groups (k not
// GroupPP, stage in range) cut from s: valid, unmodified, until s's next
// Reset. Any other listing is Groups'.
//
// Why: a sweep's pricer lists every kind of every stage each point
// (simulation's pricer.groupRanks), and Groups' two arrays a listing were
// ≈ 0.6 MB of the 1,000-point 70B sweep, new memory each (its collector
// seldom runs: ≈ 160 page faults). The store's arrays grow to the largest
// point's listings and are written again point after point. When one is
// full a new one twice as large is taken (what was handed out stays where
// it is, valid).
func (l *Layout) GroupsInto(k GroupKind, stage int, s *GroupStore) [][]int {
	if stage < 0 || k == GroupPP || stage >= l.PP {
		return l.Groups(k, stage)
	}
	n := l.TP * l.CP * l.DP
	var ranks []int // nil: the n ranks from stage·n on
	if l.stride[DimPP] != n {
		ranks = l.StageRanks(stage)
	}
	size := max(1, l.GroupSize(k))
	ng := (n + size - 1) / size // groups partition the stage: n/size, at most this
	if len(s.ranks)-s.used < n {
		s.ranks, s.used = make([]int, max(2*len(s.ranks), n)), 0
	}
	if len(s.lists)-s.nlist < ng {
		s.lists, s.nlist = make([][]int, max(2*len(s.lists), ng)), 0
	}
	if len(s.seen) < n {
		s.seen = make([]bool, n)
	}
	seen := s.seen[:n]
	out := l.stageGroups(k, stage, ranks, s.lists[s.nlist:s.nlist:len(s.lists)], s.ranks[s.used:s.used:s.used+n], seen)
	clear(seen)
	s.nlist += len(out)
	s.used += n
	return out[:len(out):len(out)]
}

// stageGroups is Groups' listing of stage's kind-k groups (k not GroupPP,
// the stage in range; ranks: the stage's ranks, or nil when they are the
// n = TP·CP·DP from stage·n on), appended to out (empty) with the groups
// cut from buf's tail (room for n ranks) and seen (n, all false) as
// scratch, which it leaves all true.
func (l *Layout) stageGroups(k GroupKind, stage int, ranks []int, out [][]int, buf []int, seen []bool) [][]int {
	n := l.TP * l.CP * l.DP
	base := stage * n
	at := func(r int) int {
		if ranks == nil {
			return r - base
		}
		c := l.CoordOf(r)
		return c.TP + l.TP*(c.CP+l.CP*c.DP)
	}
	for i := range n {
		r := base + i
		if ranks != nil {
			r = ranks[i]
		}
		if seen[at(r)] {
			continue
		}
		from := len(buf)
		buf = l.appendGroup(buf, k, r)
		g := buf[from:len(buf):len(buf)]
		for _, m := range g {
			seen[at(m)] = true
		}
		out = append(out, g)
	}
	return out
}
