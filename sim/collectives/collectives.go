// Package collectives turns one collective operation on a group of GPU ranks
// into time: a closed-form alpha-beta cost per algorithm (analytic fidelity)
// or transfers on the fabric (flow fidelity).
//
// API CONTRACT (stub written before implementation; relied on by sim and the
// CLI).
package collectives

import (
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
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
)

// Algo is an algorithm choice.
type Algo uint8

const (
	Auto Algo = iota
	Ring
	Tree // double binary tree
	NVLS
	Hierarchical
	Direct // pairwise all-to-all / point-to-point
)

// Group is a set of GPU ranks on a cluster with its shape analysed once
// (domains spanned, ranks per domain, bottleneck bandwidths). Safe to reuse.
type Group struct {
	// implementation state
}

// NewGroup analyses ranks (distinct GPU ranks of c, in ring order).
func NewGroup(c *topology.Cluster, ranks []int) (*Group, error) { panic("TODO") }

// Cost is the closed-form prediction for one collective.
type Cost struct {
	Time  engine.Time
	Algo  Algo    // the algorithm used (resolved when Auto was asked)
	AlgBW float64 // bytes/s, nccl-tests definition
	BusBW float64 // bytes/s, nccl-tests definition
}

// Cost predicts op on g moving bytes (nccl-tests size convention).
func (g *Group) Cost(op Op, algo Algo, bytes float64) (Cost, error) { panic("TODO") }

// Done is told when a collective started with Runner.Start has finished on
// every rank.
type Done interface {
	CollectiveDone(now engine.Time, tag int64)
}

// Runner plays collectives in simulated time: at analytic fidelity one timer
// of Cost.Time, at flow fidelity the algorithm's transfers on the fabric.
type Runner struct {
	// implementation state
}

func NewRunner(e *engine.Engine, f *network.Fabric, fid network.Fidelity, c *topology.Cluster) *Runner {
	panic("TODO")
}

// Start begins op on g now; done.CollectiveDone(now, tag) fires when it ends.
func (r *Runner) Start(g *Group, op Op, algo Algo, bytes float64, done Done, tag int64) error {
	panic("TODO")
}
