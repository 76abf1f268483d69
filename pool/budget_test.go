package pool

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A caller waiting for the budget that leaves frees its place in the one
// queue at once: with MaxQueueSize 1, the next caller waits instead of being
// refused with nobody waiting.
func TestKeyedQueueLimitFreesALeaversPlaceAtOnce(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 1, MaxQueueSize: 1})
	h.add("a", Config{})
	h.add("b", Config{})
	h.add("c", Config{})
	a := h.take("a")
	h.claimLeft("b")
	h.ev.drain()
	c := h.takeAsync(context.Background(), "c")
	h.ev.wait(t, "take", 1) // the loop has decided c's request
	if s := h.k.Stats(); s.QueueFull != 0 || s.WaitingForBudget != 1 {
		t.Fatalf("c refused %d times, %d waiting for the budget; want c waiting (nobody else waits)", s.QueueFull, s.WaitingForBudget)
	}
	h.giveBack(a)
	h.giveBack(h.served(c))
}

// The queue limit counts callers queued for a give-back and callers waiting
// for the budget together: of two arriving together, the second is refused
// even while the loop has not yet published the first one's claim.
func TestKeyedQueueLimitCountsCallersArrivingTogether(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 2, MaxQueueSize: 1})
	h.add("a", Config{MaxObjects: 1})
	h.add("b", Config{})
	a, b1 := h.take("a"), h.take("b") // the budget is spent, a is at its own cap
	held, release := h.holdLoop()
	defer release()
	b2 := h.takeAsync(context.Background(), "b") // a claim for the budget
	<-held                                       // the loop holds b2's claim, unpublished
	a2 := h.takeAsync(context.Background(), "a") // would queue for a's give-back
	waitUntil(t, "a's second caller is refused or waits", func() bool {
		return !pending(a2) || blockedInTake(2) // b2 and a2
	})
	if pending(a2) {
		t.Fatal("a's second caller queued while b's caller waited for the budget: 2 waiting, MaxQueueSize 1")
	}
	release()
	if r := h.result(a2); !errors.Is(r.err, ErrQueueFull) {
		t.Fatalf("a's second Take = %v with b's caller waiting for the budget; want ErrQueueFull (MaxQueueSize 1)", r.err)
	}
	h.giveBack(a)
	h.giveBack(h.served(b2)) // a's object, yielded
	h.giveBack(b1)
}

// A caller whose creation, granted a slot of the budget, failed waits for
// the next attempt first in line; when the budget is spent again by then,
// it claims a slot again, and is served.
func TestKeyedCallerClaimsTheBudgetAgainAfterItsCreationFailed(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 2})
	h.add("a", Config{})
	bf := &fakeFactory{}
	pb := h.addOf("b", factoryOf[*fakeObj](bf), Config{})
	h.add("c", Config{})
	a1, b1 := h.take("a"), h.take("b")
	bf.set(func(f *fakeFactory) { f.createErr = errors.New("connection refused") })
	w := h.claimWith(deadlineCtx{Context: context.Background(), dl: h.clk.Now().Add(time.Hour)}, "b", 1)
	h.giveBack(a1) // yielded to b's caller, whose creation fails: it waits for the next attempt
	waitUntil(t, "b backs off", func() bool { return h.k.Stats().Keys["b"].NextCreateAttempt.After(h.clk.Now()) })
	c1 := h.take("c") // the failed creation's slot: the budget is spent again
	bf.set(func(f *fakeFactory) { f.createErr = nil })
	h.clk.Advance(pb.Config().BackoffMax)
	h.ev.wait(t, "retry", 1) // b's caller claims the budget again
	h.giveBack(c1)           // yielded to it
	hw := h.served(w)
	if hw.e.pool != pb {
		t.Fatal("b's caller got an object of another key")
	}
	h.giveBack(hw)
	h.giveBack(b1)
}

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
	if s := h.k.Stats(); totalDestroyed(s.Keys["a"].Destroys) != 1 || s.Keys["b"].Creates != 1 {
		t.Fatalf("a destroyed %v, b created %d; want a's object destroyed for b's", s.Keys["a"].Destroys, s.Keys["b"].Creates)
	}
}

// The last caller of a key to stop waiting, leaving an object idle in the
// key's queue (passed on at its turn by the overload policy, with nobody
// after it), frees that object for another key's caller waiting for the
// budget at once, not at the next tick.
func TestKeyedLastWaiterLeavingFreesItsKeysIdleObjectForTheBudget(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 3, MaxQueueSize: 10})
	h.add("x", Config{MaxObjects: 2, Overload: OverloadDeadline})
	h.add("z", Config{})
	// x's objects are held 100ms (as in overloadHarness), as many times as
	// the policy needs to judge.
	x1, x2 := h.take("x"), h.take("x")
	for range holdWeight {
		w := h.queued("x", 1)
		h.clk.Advance(100 * time.Millisecond)
		h.giveBack(x1)
		x1 = h.served(w)
	}
	if hold := h.k.member("x").Stats().MeanHold; hold != 100*time.Millisecond {
		t.Fatalf("x's MeanHold = %v, want the 100ms measured", hold)
	}
	z1 := h.take("z") // the budget is spent: x 2, z 1
	q1, q2 := h.queued("x", 1), h.queued("x", 2)
	late := h.takeAsync(deadlineCtx{Context: context.Background(), dl: h.clk.Now().Add(300 * time.Millisecond)}, "x")
	waitUntil(t, "x's third caller queues", func() bool { return h.k.member("x").Stats().Queued == 3 && blockedInTake(3) })
	zc := h.claim("z", 1) // x holds 2, z 1: x's give-backs stay x's

	h.clk.Advance(250 * time.Millisecond) // late has 50ms left
	h.giveBack(x1)
	h.giveBack(x2)
	r1, r2 := h.served(q1), h.served(q2)
	h.giveBack(r1) // late's turn: it passes the object on, to nobody
	var oe *OverloadError
	if r := h.result(late); !errors.As(r.err, &oe) || !oe.AtTurn {
		t.Fatalf("x's late caller: %v, want an *OverloadError at its turn", r.err)
	}
	h.giveBack(h.served(zc)) // no tick: the fake clock does not tick
	if s := h.k.Stats(); s.Keys["x"].Destroys.Evicted != 1 || s.Keys["z"].Creates != 2 {
		t.Fatalf("x evicted %d, z created %d; want x's idle object evicted for z's caller", s.Keys["x"].Destroys.Evicted, s.Keys["z"].Creates)
	}
	h.giveBack(r2)
	h.giveBack(z1)
}

// A busy key below its own cap, whose queued callers claim the budget too,
// still lends it to a key that holds none: the slot goes to the key holding
// fewest, and the busy key's give-backs yield to it until both hold about
// as many (issue: c got nothing through 50 of a's give-backs).
func TestKeyedBusyKeyWithClaimsLendsTheBudgetToAStarvedKey(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 4, MaxQueueSize: 10})
	h.add("a", Config{MaxObjects: 4})
	h.add("b", Config{})
	h.add("c", Config{})
	var as []Handle[*fakeObj]
	for range 4 {
		as = append(as, h.take("a"))
	}
	aw1 := h.queued("a", 1)
	aw2 := h.queued("a", 2)
	b := h.claim("b", 1)
	h.giveBack(as[0]) // a 4, b 0: to b
	hb := h.served(b)
	h.destroyed("a", reasonYielded, 1)
	// a holds 3, below its cap: its queued callers claim the budget too,
	// before c's caller comes.
	waitUntil(t, "a's queued callers claim the budget", func() bool { return h.k.member("a").Stats().Total == 3 })
	c := h.claim("c", 1)

	h.giveBack(as[1]) // a 3, c 0: to c, although a's callers wait and claimed first
	hc := h.served(c)
	h.destroyed("a", reasonYielded, 2)
	if !pending(aw1) || !pending(aw2) {
		t.Fatal("a's queued caller got the object that went to c")
	}
	h.giveBack(as[2]) // a 2, c 1: a's own
	ha1 := h.served(aw1)
	s := h.k.Stats()
	if s.Keys["a"].Total != 2 || s.Keys["b"].Total != 1 || s.Keys["c"].Total != 1 || s.Keys["a"].Destroys.Yielded != 2 {
		t.Fatalf("a %d, b %d, c %d, a yielded %d; want 2, 1, 1, 2", s.Keys["a"].Total, s.Keys["b"].Total, s.Keys["c"].Total, s.Keys["a"].Destroys.Yielded)
	}
	h.giveBack(as[3])
	h.giveBack(h.served(aw2))
	for _, hd := range []Handle[*fakeObj]{ha1, hb, hc} {
		h.giveBack(hd)
	}
	if m := h.f.maxLive.Load(); m > 4 {
		t.Fatalf("%d objects alive at once, budget 4", m)
	}
}

// A key closed while a creation of its own runs keeps the slot until the
// creation returns and what it made is destroyed: another key's caller
// waits for it meanwhile, and the budget is never exceeded (a Group whose
// members closed every few ms exceeded MaxConns).
func TestKeyedKeyClosedWithACreationInFlightKeepsItsSlot(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 1})
	pa := h.add("a", Config{})
	h.add("b", Config{})
	gate := make(chan struct{})
	h.f.set(func(f *fakeFactory) { f.gate, f.deafToCtx = gate, true }) // a's creation makes its object whatever its context says
	a := h.takeAsync(context.Background(), "a")
	waitUntil(t, "a's creation runs", func() bool { return h.f.attempts.Load() == 1 })
	h.f.set(func(f *fakeFactory) { f.gate = nil }) // the next creations make theirs at once
	h.ev.drain()
	pa.StartClose()
	if r := h.result(a); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("a's Take = %v, want ErrClosed", r.err)
	}
	h.ev.wait(t, "created", 1) // the loop has given up on a's creation
	b := h.takeAsync(context.Background(), "b")
	waitUntil(t, "b is served or waits for the budget", func() bool { return !pending(b) || h.k.Stats().WaitingForBudget == 1 })
	if !pending(b) {
		t.Fatal("b's object was made while a's creation, given up on at a's Close, still ran: budget 1")
	}
	close(gate) // a's object arrives, and is destroyed
	h.giveBack(h.served(b))
	if m := h.f.maxLive.Load(); m != 1 {
		t.Fatalf("%d objects alive at once, budget 1", m)
	}
	if s := h.k.Stats(); s.Destroys.Closed != 1 || s.Keys["b"].Creates != 1 {
		t.Fatalf("destroyed %v, b created %d; want a's late object destroyed (its key closed), b's made", s.Destroys, s.Keys["b"].Creates)
	}
}

// A Keyed's Stats keep what its closed keys counted, and nothing of their
// state: not the callers that waited in them, not their failures in a row
// or next attempt.
func TestKeyedStatsKeepOnlyTheCountsOfClosedKeys(t *testing.T) {
	const keys = 20
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 2, MaxQueueSize: 100})
	failing := &fakeFactory{}
	failing.createErr = errors.New("connection refused")
	down := h.addOf("down", factoryOf[*fakeObj](failing), Config{})
	if _, err := h.k.Take(context.Background(), "down"); err == nil {
		t.Fatal("Take of a key whose creations fail succeeded")
	}
	waitUntil(t, "down backs off", func() bool { return h.k.Stats().NextCreateAttempt.After(h.clk.Now()) })
	h.add("busy", Config{})
	b1, b2 := h.take("busy"), h.take("busy") // the budget is spent
	var pools []*Pool[*fakeObj]
	var waiters []chan takeResult
	for i := range keys {
		key := fmt.Sprintf("k%d", i)
		pools = append(pools, h.add(key, Config{}))
		waiters = append(waiters, h.claim(key, i+1))
	}
	down.StartClose()
	for _, p := range pools {
		p.StartClose()
	}
	for _, w := range waiters {
		if r := h.result(w); !errors.Is(r.err, ErrClosed) {
			t.Fatalf("a closed key's waiting Take = %v, want ErrClosed", r.err)
		}
	}
	waitUntil(t, "the closed keys are retired", func() bool {
		h.k.statsMu.Lock()
		defer h.k.statsMu.Unlock()
		return len(h.k.pools) == 1
	})
	s := h.k.Stats()
	if s.Waiting != 0 || s.WaitingForBudget != 0 || s.Total != 2 || s.InUse != 2 {
		t.Fatalf("waiting %d, for the budget %d, total %d, in use %d; want busy's 2 in use, nobody waiting", s.Waiting, s.WaitingForBudget, s.Total, s.InUse)
	}
	if s.CreateFailuresInARow != 0 || !s.NextCreateAttempt.IsZero() {
		t.Fatalf("failures in a row %d, next attempt %v; want none: the failing key is closed", s.CreateFailuresInARow, s.NextCreateAttempt)
	}
	if s.CreateFailures != 1 || s.Creates != 2 || s.Takes != 2 {
		t.Fatalf("create failures %d, creates %d, takes %d; want the closed keys' counts kept: 1, 2, 2", s.CreateFailures, s.Creates, s.Takes)
	}
	h.giveBack(b1)
	h.giveBack(b2)
}

// TryTake of a key with nothing idle, while other keys' idle objects hold
// the budget, has the least recently used of them destroyed for a creation
// of its own, as Pool.TryTake creates below MaxObjects: a later TryTake
// succeeds.
func TestKeyedTryTakeMakesRoomFromAnotherKeysIdleObjects(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 1})
	h.add("a", Config{})
	h.add("b", Config{})
	h.giveBack(h.take("a")) // a's idle object holds the budget
	if _, err := h.k.TryTake("b"); !errors.Is(err, ErrNoIdleObject) {
		t.Fatalf("TryTake = %v, want ErrNoIdleObject", err)
	}
	waitUntil(t, "b has an idle object", func() bool { return h.k.Stats().Keys["b"].Idle == 1 })
	hd, err := h.k.TryTake("b")
	if err != nil {
		t.Fatalf("TryTake once b has an idle object = %v", err)
	}
	h.giveBack(hd)
	if s := h.k.Stats(); s.Keys["a"].Destroys.Evicted != 1 || h.f.maxLive.Load() != 1 {
		t.Fatalf("a evicted %d, %d alive at once; want a's idle object evicted, budget 1", s.Keys["a"].Destroys.Evicted, h.f.maxLive.Load())
	}
}
