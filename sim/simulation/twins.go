package simulation

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/topology"
)

// Twin plays (issue 18, round 69). Layouts that differ only in their
// activation recomputation often build the same task graph: selective
// recomputation of the attention core adds nothing where FlashAttention's
// backward already recomputes it (workload.RecomputeOps), so a search
// over none, selective and full meets each such layout twice, and at flow
// fidelity, where every rank plays and a play of Llama 3 70B on 512 H100
// takes about a second, the 70B plan played each of its five best twice
// (docs/design.md, round 69). Their figures differ all the same where
// recomputation counts outside the play: hardware FLOPs (HFU) and memory.
//
// So the every-rank plays of one sweep (the Reuses given one PriceShare)
// share their figures: a play's key is a SHA-256 of the scenario's
// canonical form with its recomputation fields left out, and of the built
// programs (parallel.HashPrograms). Recomputation reaches the play only
// through the programs (parallel.StepConfig's Recompute, RecomputeEvery,
// RecomputeToOutput and Shape.RecomputeModules are read by the builder
// alone), so two points of one key play alike, event for event: the
// second takes the first's figures from the play (step times, exposed
// communication, bubble, events) and works out its own from its scenario
// (FLOPs, MFU and HFU, memory, cost and energy: deriveFigures). A point
// that finds its twin still playing on another worker waits for it.
// Representative-rank plays (analytic fidelity) are not shared: at a
// fraction of a millisecond each, hashing their programs would cost more
// than the rare twin saves.

// twinPlays is the figures of a sweep's every-rank plays, by key. Safe for
// concurrent use; the zero value is ready.
type twinPlays struct {
	mu      sync.Mutex
	cluster *topology.Cluster // the cluster the plays ran on (PriceShare.built)
	plays   map[[sha256.Size]byte]*twinPlay
}

// maxTwinPlays bounds twinPlays' map: when full it starts afresh (about a
// kilobyte an entry).
const maxTwinPlays = 4096

// twinPlay is one play's outcome, written by the Run that claimed it
// (twinClaim.own) and read by others once done is closed.
type twinPlay struct {
	done chan struct{}
	ok   bool        // the play ended, and res holds its figures
	end  engine.Time // the play's last event
	res  Result      // its figures (Steps its own copy; no tasks, cluster or layout)
	// cut says the play was given up at deadline (parallel.Executor
	// .RunBefore), with bound its StepBoundS: a twin played against the
	// same deadline is given up at the same event, with the same bound.
	cut      bool
	deadline engine.Time
	bound    float64
}

// twinClaim is a Run's part in its sweep's twinPlays.
type twinClaim struct {
	plays   *twinPlays
	cluster *topology.Cluster
	key     [sha256.Size]byte
	own     *twinPlay   // the entry this Run plays for: filled or abandoned by it
	hit     *twinPlay   // the twin whose figures this Run takes
	limit   engine.Time // the deadline this Run plays against (0: none)
}

// errTwinPlayed is play's report that the step it built is a twin's,
// whose figures the twinClaim holds (a twin given up at the cutoff: play
// reports errRuledOut, with the twin's bound).
var errTwinPlayed = errors.New("simulation: a twin's play")

// twins returns r's claim on its share's twin plays for a Run of s, or nil
// where plays are not shared: no share, the caller reads more than the
// figures, or one representative rank per stage plays.
func (r *Reuse) twins(s *scenario.Plan, opt Options, cl *topology.Cluster) *twinClaim {
	if r == nil || r.share == nil || !opt.FiguresOnly || (s.Fidelity() == network.Analytic && !opt.AllRanks) {
		return nil
	}
	r.twin = twinClaim{plays: &r.share.twins, cluster: cl}
	return &r.twin
}

// twinKey is the key of s's play of progs: SHA-256 of s's canonical form
// without its recomputation fields, then of the programs.
func twinKey(s *scenario.Plan, progs []*parallel.Program) (key [sha256.Size]byte) {
	m := s.Scenario // (a copy: the point's own fields are left as they are)
	t := &m.Training
	t.Recompute, t.RecomputeModules, t.RecomputeEvery, t.RecomputeReentrant = "", nil, 0, false
	h := sha256.New()
	h.Write(m.CanonicalJSON())
	parallel.HashPrograms(h, progs)
	h.Sum(key[:0])
	return key
}

// lookup reports whether a play of key (twinKey) is a twin's whose
// outcome c may take, waiting for it while it plays: one played to its
// end on c's cluster by deadline (0: no deadline; a play whose last event
// is at or before it is never given up, parallel.Executor.RunBefore:
// Options.StepCutoffS), or one given up against the same deadline
// (c.hit.cut). False: the caller plays, and where no play of the key is
// known, c owns the key's entry (fill, fillCut, abandon).
func (c *twinClaim) lookup(ctx context.Context, key [sha256.Size]byte, deadline engine.Time) bool {
	c.key, c.limit = key, deadline
	for {
		p := c.plays
		p.mu.Lock()
		if p.cluster != c.cluster || len(p.plays) >= maxTwinPlays {
			p.cluster, p.plays = c.cluster, nil
		}
		e := p.plays[c.key]
		if e == nil {
			if p.plays == nil {
				p.plays = map[[sha256.Size]byte]*twinPlay{}
			}
			c.own = &twinPlay{done: make(chan struct{})}
			p.plays[c.key] = c.own
			p.mu.Unlock()
			return false
		}
		p.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return false // (the play notices)
		}
		switch {
		case e.cut && deadline > 0 && deadline == e.deadline:
		case e.cut:
			return false // given up against another deadline: played to find out
		case !e.ok:
			continue // abandoned, and gone from the map: claim it, or find a newer one
		case deadline > 0 && e.end > deadline:
			return false // its own play may be given up: played to find out
		}
		c.hit = e
		return true
	}
}

// fill keeps res's figures (its play ended at end) as c's entry's, for its
// twins to take. Nothing where c owns no entry.
func (c *twinClaim) fill(res *Result, end engine.Time) {
	if c == nil || c.own == nil {
		return
	}
	e := c.own
	c.own = nil
	e.res = *res
	e.res.Steps = append([]StepRecord(nil), res.Steps...)
	e.res.KeepFiguresOnly()
	e.res.Scenario, e.res.Cluster, e.res.Layout, e.res.Memory, e.res.fabric = nil, nil, nil, nil, nil
	e.end, e.ok = end, true
	close(e.done)
}

// fillCut keeps, as c's entry's outcome, that its play was given up
// against the deadline c looked up with, with bound its StepBoundS.
func (c *twinClaim) fillCut(bound float64) {
	if c == nil || c.own == nil || c.limit == 0 {
		c.abandon()
		return
	}
	e := c.own
	c.own = nil
	e.cut, e.deadline, e.bound = true, c.limit, bound
	close(e.done)
}

// abandon gives up c's entry, where c still owns one (its play failed or
// was cancelled): it leaves the map, and a twin waiting for it plays
// itself.
func (c *twinClaim) abandon() {
	if c == nil || c.own == nil {
		return
	}
	e := c.own
	c.own = nil
	p := c.plays
	p.mu.Lock()
	if p.plays[c.key] == e {
		delete(p.plays, c.key)
	}
	p.mu.Unlock()
	close(e.done)
}

// take sets res (Scenario, RunID, Cluster and Layout set, Steps its
// storage) to the twin's figures from the play, with nothing played here;
// deriveFigures then works out the rest from res's own scenario. (Not for
// a twin given up: play reports that one.)
func (c *twinClaim) take(res *Result) {
	e := c.hit
	s, id, cl, l, steps := res.Scenario, res.RunID, res.Cluster, res.Layout, res.Steps[:0]
	*res = e.res
	res.Scenario, res.RunID, res.Cluster, res.Layout = s, id, cl, l
	res.Steps = append(steps, e.res.Steps...)
	res.PlayedTasks, res.FailedTasks, res.ResumedTasks = 0, 0, 0
	res.TwinPlay = true
}
