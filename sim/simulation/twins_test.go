package simulation

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/simtrain/simtrain/sim/engine"
)

// The memo of twin plays by key: the first lookup owns the entry and
// plays; a second waits for it; an abandoned entry is claimed anew by the
// waiter; a filled one is taken where its play ended before the deadline
// (or with none), and not where it ended after it.
func TestTwinClaims(t *testing.T) {
	ctx := context.Background()
	share := new(PriceShare)
	claim := func() *twinClaim { return &twinClaim{plays: &share.twins} }
	key := sha256.Sum256([]byte("a step"))
	first := claim()
	if first.lookup(ctx, key, 0) || first.own == nil {
		t.Fatal("the first lookup of a key does not own it")
	}
	waiter := claim()
	found := make(chan bool)
	go func() { found <- waiter.lookup(ctx, key, 0) }()
	select {
	case <-found:
		t.Fatal("a lookup did not wait for the play that owns its key")
	case <-time.After(20 * time.Millisecond):
	}
	first.abandon()
	if <-found || waiter.own == nil {
		t.Fatal("after its owner gave it up, the waiter neither took nor owned the key")
	}
	res := &Result{StepTimeS: 2.5, Events: 7, Steps: []StepRecord{{BaseS: 2.5, TimeS: 2.5}}, PeakMemBytes: 1}
	waiter.fill(res, 100)
	res.Steps[0].TimeS = 9 // the owner's storage, used again: the entry keeps its own copy
	for _, c := range []struct {
		deadline int64
		taken    bool
	}{{0, true}, {101, true}, {100, true}, {99, false}, {50, false}} {
		twin := claim()
		got := twin.lookup(ctx, key, engine.Time(c.deadline))
		if got != c.taken || twin.own != nil {
			t.Errorf("deadline %d: taken %v (owning %v), want %v", c.deadline, got, twin.own != nil, c.taken)
		}
		if !got {
			continue
		}
		into := &Result{RunID: "mine", PeakMemBytes: 5}
		twin.take(into)
		if into.RunID != "mine" || into.StepTimeS != 2.5 || into.Events != 7 || len(into.Steps) != 1 || into.Steps[0].TimeS != 2.5 || !into.TwinPlay {
			t.Errorf("deadline %d: took %+v", c.deadline, into)
		}
	}
	other := claim()
	if other.lookup(ctx, sha256.Sum256([]byte("another step")), 0) || other.own == nil {
		t.Error("another key was taken, or not owned")
	}
	other.abandon()
}
