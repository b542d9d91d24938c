package parallel

import (
	"math"
	"strings"
	"testing"
)

// TestTaskAux holds Task's shared word (aux) to hand-computed values: a
// compute task's FLOPs come back bit for bit and it has no peer or match;
// a send's or receive's peer and match, -1 included, come back and its
// FLOPs are 0, whatever the word holds.
func TestTaskAux(t *testing.T) {
	cases := []struct {
		name        string
		task        Task
		flops       float64
		peer, match int32
	}{
		{"compute", Task{Kind: KindForward, aux: math.Float64bits(1.5e12)}, 1.5e12, -1, -1},
		{"compute, no FLOPs", Task{Kind: KindBackward}, 0, -1, -1},
		{"optimizer", Task{Kind: KindOptimizer, aux: math.Float64bits(3)}, 3, -1, -1},
		{"collective", Task{Kind: KindAllReduce}, 0, -1, -1},
		// 0x0000_0003_FFFF_FFFF: peer 3, match -1 (an unlinked receive)
		{"receive", Task{Kind: KindRecv, aux: 3<<32 | 0xFFFF_FFFF}, 0, 3, -1},
		{"send", Task{Kind: KindSend, aux: p2pAux(7, 123456)}, 0, 7, 123456},
		{"send, highest", Task{Kind: KindSend, aux: p2pAux(math.MaxInt32, math.MaxInt32)}, 0, math.MaxInt32, math.MaxInt32},
	}
	for _, c := range cases {
		if f := c.task.FLOPs(); math.Float64bits(f) != math.Float64bits(c.flops) {
			t.Errorf("%s: FLOPs %g, want %g", c.name, f, c.flops)
		}
		if p, m := c.task.Peer(), c.task.Match(); p != c.peer || m != c.match {
			t.Errorf("%s: peer %d match %d, want %d %d", c.name, p, m, c.peer, c.match)
		}
		if c.task.Kind.isP2P() {
			if p, m := c.task.p2p(); p != int(c.peer) || m != int(c.match) {
				t.Errorf("%s: p2p() %d %d, want %d %d", c.name, p, m, c.peer, c.match)
			}
		}
	}
	var s Task
	s.Kind = KindSend
	s.setP2P(2, -1)
	if s.aux != 0x0000_0002_FFFF_FFFF {
		t.Errorf("setP2P(2, -1): aux %#x, want 0x2ffffffff", s.aux)
	}
	s.setP2P(s.Peer(), 41)
	if s.Peer() != 2 || s.Match() != 41 {
		t.Errorf("setP2P(2, 41): peer %d match %d", s.Peer(), s.Match())
	}
	var c Task
	c.setFLOPs(math.Copysign(0, -1))
	if c.aux != 1<<63 {
		t.Errorf("setFLOPs(-0): aux %#x, want the sign bit", c.aux)
	}
}

// TestCheckNarrow: a build whose steps or chunks per stage do not fit
// Task.Step or Task.Chunk (int16) fails with an error naming the field;
// the largest that fit pass.
func TestCheckNarrow(t *testing.T) {
	for _, c := range []struct {
		steps, chunks int
		want          string
	}{
		{1, 1, ""},
		{math.MaxInt16, math.MaxInt16, ""},
		{math.MaxInt16 + 1, 1, "steps: 32768"},
		{1, math.MaxInt16 + 1, "virtual stages: 32768"},
	} {
		err := checkNarrow(c.steps, c.chunks)
		if (err == nil) != (c.want == "") || err != nil && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("checkNarrow(%d, %d) = %v, want %q", c.steps, c.chunks, err, c.want)
		}
	}
	cfg := copyConfig(t, 2, 1, 4, 4)
	cfg.Steps = math.MaxInt16 + 1
	if _, err := Build(cfg, blockPricer{}); err == nil || !strings.HasPrefix(err.Error(), "steps: ") {
		t.Errorf("Build with %d steps: %v, want the steps error", cfg.Steps, err)
	}
}
