package pool

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A give-back that lands between the loop's eviction scan and its
// publication of who waits for the budget still reaches the waiting caller
// at once, not at the next tick.
func TestKeyedGiveBackBetweenScanAndPublicationServesTheClaim(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 1})
	h.add("a", Config{})
	h.add("b", Config{})
	a := h.take("a")
	held, release := h.holdLoop()
	defer release()
	b := h.takeAsync(context.Background(), "b")
	<-held // b's claim is filed and a has nothing idle to evict
	h.giveBack(a)
	release()
	h.giveBack(h.served(b)) // no tick: the fake clock does not move
	if s := h.k.Stats(); s.Keys["a"].Destroys.Total() != 1 || s.Keys["b"].Creates != 1 {
		t.Fatalf("a destroyed %v, b created %d; want a's object destroyed for b's", s.Keys["a"].Destroys, s.Keys["b"].Creates)
	}
}

// The last caller of a key to stop waiting, leaving an object idle in the
// key's queue (passed on at its turn by the overload policy, with nobody
// after it), frees that object for another key's caller waiting for the
// budget at once, not at the next tick.
func TestKeyedLastWaiterLeavingFreesItsKeysIdleObjectForTheBudget(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 3, MaxQueueSize: 10})
	h.add("x", Config{MaxObjects: 2, Overload: OverloadConfig{Policy: OverloadDeadline}})
	h.add("z", Config{})
	// x's objects are held 100ms (as in overloadHarness).
	x1, x2 := h.take("x"), h.take("x")
	w := h.queued("x", 1)
	h.clk.Move(100 * time.Millisecond)
	h.giveBack(x1)
	x1 = h.served(w)
	if hold := h.k.Pool("x").Stats().MeanHold; hold != 100*time.Millisecond {
		t.Fatalf("x's MeanHold = %v, want the 100ms measured", hold)
	}
	z1 := h.take("z") // the budget is spent: x 2, z 1
	q1, q2 := h.queued("x", 1), h.queued("x", 2)
	late := h.takeAsync(deadlineCtx{Context: context.Background(), dl: h.clk.Now().Add(300 * time.Millisecond)}, "x")
	waitUntil(t, "x's third caller queues", func() bool { return h.k.Pool("x").Stats().Queued == 3 && blockedInTake(3) })
	zc := h.claim("z", 1) // x holds 2, z 1: x's give-backs stay x's

	h.clk.Move(250 * time.Millisecond) // late has 50ms left
	h.giveBack(x1)
	h.giveBack(x2)
	r1, r2 := h.served(q1), h.served(q2)
	h.giveBack(r1) // late's turn: it passes the object on, to nobody
	var oe *OverloadError
	if r := h.result(late); !errors.As(r.err, &oe) || !oe.AtTurn {
		t.Fatalf("x's late caller: %v, want an *OverloadError at its turn", r.err)
	}
	h.giveBack(h.served(zc)) // no tick: the fake clock does not tick
	if s := h.k.Stats(); s.Keys["x"].Destroyed(DestroyEvicted) != 1 || s.Keys["z"].Creates != 2 {
		t.Fatalf("x evicted %d, z created %d; want x's idle object evicted for z's caller", s.Keys["x"].Destroyed(DestroyEvicted), s.Keys["z"].Creates)
	}
	h.giveBack(r2)
	h.giveBack(z1)
}
