package simulation

import (
	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/topology"
)

// sendMemo keeps the contention shares of pipeline-boundary sends
// (pricer.sendContention: every rank of a stage sending to its peer at
// once) found on one cluster, across the layouts a Reuse plays on it. A
// boundary's share depends only on the cluster and the pairs it routes, and
// the pairs only on the sending stage's ranks and the peer step; many
// layouts of a sweep have the same ones (on the 1,000-point 70B sweep every
// tensor-parallel size under one pipeline size has the same contiguous
// stages and steps: 26 distinct boundaries among the 130 of its 25 layouts),
// and each boundary routes a stage's worth of pairs twice (issue 18). The
// layouts' own tables (priceTables.sendShare, the send groups) stay per
// layout: only the share is kept here. The zero value is empty; not safe
// for concurrent use (one per Reuse). With a PriceShare (Reuse
// .SharePrices) it also takes and offers shares there, so that a sweep's
// workers route each boundary once between them.
type sendMemo struct {
	c      *topology.Cluster // the cluster the shares were found on
	shares map[sendKey]float64
	share  *PriceShare // nil: none
}

// maxSendShares bounds a sendMemo: past it the memo starts again empty,
// which changes no figure (a share found afresh is the same share), only
// the work. A sweep's cluster has a few dozen boundaries; 4,096 keys of
// 88 bytes are ≈ 0.4 MB.
const maxSendShares = 4096

// maxSendLevels is the most strided levels a sendKey describes; a stage
// of a layout is at most three (its ranks' tensor, context and data
// coordinates, contiguous where adjacent in the rank order), so four
// leave room.
const maxSendLevels = 4

// sendKey determines a boundary's send pairs exactly: the sending stage's
// ranks, ascending, are first + Σ_l i_l·levels[l].stride for every i_l in
// [0, levels[l].count) (level 0 varying fastest; unused levels zero), each
// rank r sending to r + step. stridedKey builds it only for rank lists of
// that form and checks every rank against it, so two boundaries with one
// key route the same pairs in the same order.
type sendKey struct {
	first, step int
	levels      [maxSendLevels]sendLevel
}

type sendLevel struct{ count, stride int }

// stridedKey returns the sendKey of a boundary whose sending stage has the
// ascending ranks ranks (not empty) and whose peers are step away, or
// false when the ranks are not a strided set of at most maxSendLevels
// levels (such a boundary is not memoised). The levels are found greedily,
// each the longest run of the blocks the previous ones make repeating at
// the distance between the first two: the key is a function of the list,
// and the list of the key (every rank compared), so the mapping is exact.
// O(len(ranks) · levels).
func stridedKey(ranks []int, step int) (sendKey, bool) {
	k := sendKey{first: ranks[0], step: step}
	n := len(ranks)
	block := 1 // ranks per block of the levels found so far
	for l := 0; ; l++ {
		if block == n {
			if l == 0 { // a stage of one rank
				k.levels[0] = sendLevel{count: 1}
			}
			return k, true
		}
		if l == maxSendLevels {
			return sendKey{}, false
		}
		stride := ranks[block] - ranks[0]
		count := 1
		// Block j (ranks[j·block, (j+1)·block)) must be block 0 moved by
		// j·stride.
	blocks:
		for (count+1)*block <= n {
			off := count * stride
			for i := 0; i < block; i++ {
				if ranks[count*block+i] != ranks[i]+off {
					break blocks
				}
			}
			count++
		}
		if count == 1 {
			return sendKey{}, false // the next block does not repeat the first
		}
		k.levels[l] = sendLevel{count: count, stride: stride}
		block *= count
	}
}

// forCluster returns m ready for shares on cluster c: emptied when its
// shares were found on another cluster (a nil memo stays nil: nothing is
// kept).
func (m *sendMemo) forCluster(c *topology.Cluster) *sendMemo {
	if m == nil {
		return nil
	}
	if m.c != c {
		m.c, m.shares = c, nil
	}
	return m
}

// get returns the share kept for k, its own or the PriceShare's (false:
// none, or a nil memo).
func (m *sendMemo) get(k sendKey) (float64, bool) {
	if m == nil {
		return 0, false
	}
	if f, ok := m.shares[k]; ok {
		return f, ok
	}
	f, ok := m.share.sendShare(m.c, k)
	if ok {
		m.keep(k, f)
	}
	return f, ok
}

// put keeps f as k's share, and offers it to the PriceShare.
func (m *sendMemo) put(k sendKey, f float64) {
	if m == nil {
		return
	}
	m.keep(k, f)
	m.share.putSendShare(m.c, k, f)
}

// keep keeps f as k's share, starting again empty past maxSendShares.
func (m *sendMemo) keep(k sendKey, f float64) {
	if m.shares == nil || len(m.shares) >= maxSendShares {
		m.shares = make(map[sendKey]float64)
	}
	m.shares[k] = f
}

// sendShare returns the boundary send share a Reuse given s put for k on
// cluster c (false: none, c is not the share's cluster, or a nil share).
func (s *PriceShare) sendShare(c *topology.Cluster, k sendKey) (float64, bool) {
	if s == nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c != s.built {
		return 0, false
	}
	f, ok := s.sends[k]
	return f, ok
}

// putSendShare keeps f as k's share on cluster c for the share's other
// Reuses (nothing when c is not the share's cluster, or there are no
// others), starting again empty past maxSendShares. Whichever Reuse puts
// a key first, the share is the same: the figures do not depend on the
// order the workers meet the boundaries in.
func (s *PriceShare) putSendShare(c *topology.Cluster, k sendKey, f float64) {
	if s == nil || s.users.Load() < 2 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c != s.built {
		return
	}
	if s.sends == nil || len(s.sends) >= maxSendShares {
		s.sends = make(map[sendKey]float64)
	}
	s.sends[k] = f
}

// boundarySendShare is the share of a boundary's sends, the lower of its
// two directions' mean shares (collectives.MeanSendShare): every rank r of
// ranks sending to r + step, then every r + step sending to r. pairs is
// the caller's scratch for the two pair lists (returned for reuse).
func boundarySendShare(c *topology.Cluster, ranks []int, step int, pairs [2][][2]int) (float64, [2][][2]int, error) {
	fwd, bwd := pairs[0][:0], pairs[1][:0]
	for _, r := range ranks {
		q := r + step
		fwd = append(fwd, [2]int{r, q})
		bwd = append(bwd, [2]int{q, r})
	}
	pairs = [2][][2]int{fwd, bwd}
	low := 1.0
	for _, ps := range pairs {
		mean, err := collectives.MeanSendShare(c, ps)
		if err != nil {
			return 1, pairs, err
		}
		low = min(low, mean)
	}
	return low, pairs, nil
}
