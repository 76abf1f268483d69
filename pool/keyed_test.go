package pool

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/resilience"
)

func TestKeyedTakesAndGivesBackPerKey(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 4})
	h.add("primary", Config{MaxObjects: 3})
	h.add("replica", Config{})
	p, r := h.take("primary"), h.take("replica")
	if p.e.pool != h.k.member("primary") || r.e.pool != h.k.member("replica") {
		t.Fatal("a Take's object is not of its key's pool")
	}
	h.giveBack(p)
	if again := h.take("primary"); again.Value() != p.Value() {
		t.Fatal("Take of the key did not reuse its idle object")
	} else {
		h.giveBack(again)
	}
	h.giveBack(r)

	s := h.k.Stats()
	if s.MaxObjects != 4 || s.Total != 2 || s.Idle != 2 || s.Takes != 3 || s.Creates != 2 || len(s.Keys) != 2 {
		t.Fatalf("stats %+v; want MaxObjects 4, 2 alive and idle, 3 takes, 2 creates, 2 keys", s)
	}
	if ps := s.Keys["primary"]; ps.MaxObjects != 3 || ps.Takes != 2 || ps.Idle != 1 {
		t.Fatalf("primary's stats %+v; want MaxObjects 3, 2 takes, 1 idle", ps)
	}
	if rs := s.Keys["replica"]; rs.MaxObjects != 4 || rs.Takes != 1 {
		t.Fatalf("replica's stats %+v; want MaxObjects 4 (the Keyed's), 1 take", rs)
	}
	if got := h.k.member("primary").Config().Name; got != "keyed[primary]" {
		t.Fatalf("key's pool name %q, want keyed[primary]", got)
	}
}

// Keys are found whether they are few (a list) or many (a map), and a key
// closed is found no more, in either.
func TestKeyedFindsKeysFewAndMany(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 2 * listedKeys})
	var keys []string
	for i := range listedKeys + 2 {
		key := fmt.Sprintf("tenant-%d", i)
		keys = append(keys, key)
		p := h.add(key, Config{})
		for _, k := range keys {
			if got := h.k.member(k); got == nil || (k == key && got != p) {
				t.Fatalf("with %d keys: member(%q) = %p, want its pool", len(keys), k, got)
			}
		}
		if h.k.member("nobody") != nil {
			t.Fatalf("with %d keys: member of a key not added is not nil", len(keys))
		}
	}
	hd := h.take(keys[len(keys)-1])
	if hd.e.pool != h.k.member(keys[len(keys)-1]) {
		t.Fatal("a Take's object is not of its key's pool")
	}
	h.giveBack(hd)
	for _, key := range []string{keys[0], keys[len(keys)-1]} {
		h.k.member(key).StartClose()
		waitUntil(t, key+" is forgotten", func() bool { return h.k.member(key) == nil })
	}
	if _, err := h.k.Take(context.Background(), keys[0]); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("Take of a key closed = %v, want ErrUnknownKey", err)
	}
	if got := len(h.k.Stats().Keys); got != len(keys)-2 {
		t.Fatalf("%d keys, want %d", got, len(keys)-2)
	}
}

// A key below its own MaxObjects whose caller finds the budget spent waits
// for it; an object given back to a key nobody of which waits is destroyed
// for that caller.
func TestKeyedGiveBackYieldsToAKeyWaitingForTheBudget(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 2})
	h.add("a", Config{})
	h.add("b", Config{})
	a1, a2 := h.take("a"), h.take("a")
	b := h.claim("b", 1)
	if s := h.k.Stats(); s.Total != 2 || s.Waiting != 1 || s.Keys["b"].Total != 0 {
		t.Fatalf("stats %+v; want a's 2 objects alone alive and b's caller waiting", s)
	}
	h.giveBack(a1)
	hb := h.served(b)
	if h.f.maxLive.Load() > 2 {
		t.Fatalf("%d objects alive at once, budget 2", h.f.maxLive.Load())
	}
	s := h.k.Stats()
	if got := s.Keys["a"].Destroys.Yielded; got != 1 || s.Keys["b"].Creates != 1 || s.WaitingForBudget != 0 {
		t.Fatalf("a yielded %d, b created %d, %d waiting for the budget; want 1, 1, 0", got, s.Keys["b"].Creates, s.WaitingForBudget)
	}
	// Nobody waits now: a give-back stays idle.
	h.giveBack(a2)
	h.giveBack(hb)
	if s := h.k.Stats(); s.Idle != 2 || totalDestroyed(s.Destroys) != 1 {
		t.Fatalf("stats %+v; want both objects idle, one destroyed", s)
	}
}

// Callers of keys that wait for the budget are served in the order they
// came, whatever their key; a caller of a key that holds objects is served
// by its key's give-backs meanwhile.
func TestKeyedServesKeysWaitingForTheBudgetInFIFOOrder(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 2, MaxQueueSize: 10})
	for _, key := range []string{"a", "b", "c"} {
		h.add(key, Config{})
	}
	a1, a2 := h.take("a"), h.take("a")
	b1 := h.claim("b", 1)
	c1 := h.claim("c", 2)
	b2 := h.claim("b", 3)

	h.giveBack(a1)
	hb1 := h.served(b1)
	if !pending(c1) || !pending(b2) {
		t.Fatal("a later caller was served before the first")
	}
	h.giveBack(a2)
	hc1 := h.served(c1)
	if !pending(b2) {
		t.Fatal("b's second caller was served before c's")
	}
	h.giveBack(hb1) // b's own caller waits: it gets the object
	hb2 := h.served(b2)
	if hb2.Value() != hb1.Value() {
		t.Fatal("b's second caller did not get b's object given back")
	}
	h.giveBack(hb2)
	h.giveBack(hc1)
	s := h.k.Stats()
	if got := s.Keys["a"].Destroys.Yielded; got != 2 || s.Keys["b"].Creates != 1 || s.Keys["c"].Creates != 1 {
		t.Fatalf("a yielded %d, b created %d, c created %d; want 2, 1, 1", got, s.Keys["b"].Creates, s.Keys["c"].Creates)
	}
	if m := h.f.maxLive.Load(); m > 2 {
		t.Fatalf("%d objects alive at once, budget 2", m)
	}
}

// A key that keeps callers waiting still lends the budget to a key that
// has none: while it holds more than one object more than that key, its
// give-backs go to the waiting key.
func TestKeyedBusyKeyLendsTheBudgetToAStarvedKey(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 4, MaxQueueSize: 10})
	h.add("a", Config{MaxObjects: 4})
	h.add("b", Config{})
	var as []Handle[*fakeObj]
	for range 4 {
		as = append(as, h.take("a"))
	}
	aw := h.queued("a", 1) // a is at its own MaxObjects
	b := h.claim("b", 1)

	h.giveBack(as[0]) // a holds 4, b none: to b, although a's caller waits
	hb := h.served(b)
	h.destroyed("a", reasonYielded, 1)
	if !pending(aw) {
		t.Fatal("a's waiting caller got the object that went to b")
	}
	h.giveBack(as[1]) // a's caller has waited longest
	ha := h.served(aw)
	s := h.k.Stats()
	if s.Keys["a"].Total != 3 || s.Keys["b"].Total != 1 || s.Keys["a"].Destroys.Yielded != 1 {
		t.Fatalf("a has %d, b %d, a yielded %d; want 3, 1, 1", s.Keys["a"].Total, s.Keys["b"].Total, s.Keys["a"].Destroys.Yielded)
	}
	for _, hd := range []Handle[*fakeObj]{as[2], as[3], ha, hb} {
		h.giveBack(hd)
	}
}

// The budget is found among idle objects first: the least recently used,
// never taking a key below its MinIdle, from keys nobody of which waits.
func TestKeyedEvictsTheLeastRecentlyUsedIdleObject(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 4, ValidationInterval: time.Second})
	h.add("a", Config{})
	h.add("b", Config{})
	h.add("c", Config{})
	a1, a2, b1, b2 := h.take("a"), h.take("a"), h.take("b"), h.take("b")
	h.giveBack(b1) // idle longest
	h.clk.Tick(t, time.Second)
	h.ev.wait(t, "tick", 1)
	h.giveBack(a1)
	h.giveBack(a2)
	h.giveBack(b2)

	c1 := h.take("c")
	h.destroyed("b", reasonEvicted, 1)
	if got := h.f.destroyedIDs(); len(got) != 1 || got[0] != b1.Value().id {
		t.Fatalf("destroyed %v, want b's object idle longest (%d)", got, b1.Value().id)
	}
	// a and b were given back in the same tick: the key with more idle
	// spares one.
	c2 := h.take("c")
	h.destroyed("a", reasonEvicted, 1)
	if m := h.f.maxLive.Load(); m > 4 {
		t.Fatalf("%d objects alive at once, budget 4", m)
	}
	h.giveBack(c1)
	h.giveBack(c2)
}

func TestKeyedEvictionKeepsEachKeysMinIdle(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 3})
	h.add("a", Config{MinIdle: 2})
	waitUntil(t, "a has its MinIdle", func() bool { return h.k.Stats().Keys["a"].Idle == 2 })
	h.add("b", Config{})
	b1 := h.take("b")
	b2 := h.claim("b", 1) // a's idle objects are its MinIdle: b waits
	if s := h.k.Stats(); s.Keys["a"].Idle != 2 || totalDestroyed(s.Destroys) != 0 {
		t.Fatalf("stats %+v; want a's 2 idle kept", s)
	}
	h.giveBack(b1) // to b's own caller
	if got := h.served(b2); got.Value() != b1.Value() {
		t.Fatal("b's caller did not get b's object")
	} else {
		h.giveBack(got)
	}
	if s := h.k.Stats(); s.Keys["a"].Idle != 2 || totalDestroyed(s.Destroys) != 0 {
		t.Fatalf("stats %+v; want a's 2 idle kept, nothing destroyed", s)
	}
}

func TestKeyedMinIdleTogetherWithinTheBudget(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 3})
	h.add("a", Config{MinIdle: 2})
	_, err := h.k.Add("b", factoryOf[*fakeObj](h.f), Config{MinIdle: 2})
	var ce *resilience.ConfigError
	if !errors.As(err, &ce) || ce.Field != "MinIdle" {
		t.Fatalf("Add with MinIdle over the budget = %v, want a *resilience.ConfigError on MinIdle", err)
	}
	h.add("b", Config{MinIdle: 1})
	waitUntil(t, "every key has its MinIdle", func() bool {
		s := h.k.Stats()
		return s.Keys["a"].Idle == 2 && s.Keys["b"].Idle == 1
	})
}

// A caller waiting for the budget that leaves gives up its claim.
func TestKeyedCallerLeavingGivesUpItsClaim(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 1})
	h.add("a", Config{})
	h.add("b", Config{})
	a := h.take("a")
	h.claimLeft("b")
	h.giveBack(a) // nobody waits any more: it stays
	waitUntil(t, "the claim is dropped", func() bool {
		s := h.k.Stats()
		return s.WaitingForBudget == 0 && s.Idle == 1
	})
	if s := h.k.Stats(); totalDestroyed(s.Destroys) != 0 {
		t.Fatalf("destroyed %v for a caller that left", s.Destroys)
	}
}

// MaxQueueSize bounds the callers waiting in every key: for give-backs and
// for the budget.
func TestKeyedQueueLimitCountsEveryKey(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 1, MaxQueueSize: 2})
	h.add("a", Config{})
	h.add("b", Config{})
	h.add("c", Config{})
	a := h.take("a")
	aw := h.queued("a", 1)
	bw := h.claim("b", 1)
	_, err := h.k.Take(context.Background(), "c")
	var qf *queueFullError
	if !errors.As(err, &qf) || qf.MaxQueueSize != 2 || qf.MaxObjects != 1 {
		t.Fatalf("third waiter's Take = %v, want a *queueFullError (MaxQueueSize 2, MaxObjects 1)", err)
	}
	_, err = h.k.Take(context.Background(), "a")
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a's second waiter's Take = %v, want ErrQueueFull", err)
	}
	if s := h.k.Stats(); s.QueueFull != 2 {
		t.Fatalf("QueueFull %d, want 2", s.QueueFull)
	}
	h.giveBack(a) // a's caller waits: it is a's
	h.giveBack(h.served(aw))
	h.giveBack(h.served(bw))
}

func TestKeyedCloseReleasesEveryKeyAndWaitsForObjectsOut(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 2, MaxQueueSize: 10})
	h.add("a", Config{MaxObjects: 1})
	h.add("b", Config{})
	a, b := h.take("a"), h.take("b")
	h.giveBack(b)
	aw := h.queued("a", 1)
	if _, err := h.k.Take(context.Background(), "c"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("Take of an unknown key = %v, want ErrUnknownKey", err)
	}
	if h.k.Stats().Closed {
		t.Fatal("Stats.Closed before Close")
	}

	closed := make(chan error, 1)
	go func() { closed <- h.k.Close(context.Background()) }()
	if r := h.result(aw); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("waiting Take = %v, want ErrClosed", r.err)
	}
	if !h.k.Stats().Closed {
		t.Fatal("Stats.Closed false once Close has released the waiters")
	}
	waitUntil(t, "b's idle object is destroyed", func() bool { return h.k.Stats().Destroys.Closed == 1 })
	if _, err := h.k.Take(context.Background(), "b"); !errors.Is(err, ErrClosed) && !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("Take after Close = %v, want ErrClosed or ErrUnknownKey", err)
	}
	if _, err := h.k.Add("d", factoryOf[*fakeObj](h.f), Config{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close = %v, want ErrClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while an object was out", err)
	default:
	}
	h.giveBack(a)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if s := h.k.Stats(); s.Total != 0 || s.Destroys.Closed != 2 || len(s.Keys) != 0 {
		t.Fatalf("after Close: %+v; want nothing alive, 2 destroyed as closed, no keys", s)
	}
}

// Closing one key's pool frees its budget for the others; the key can then
// be added again.
func TestKeyedClosingAKeyFreesItsBudget(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 1})
	pa := h.add("a", Config{})
	h.add("b", Config{})
	a := h.take("a")
	b := h.claim("b", 1)
	closed := make(chan error, 1)
	go func() { closed <- pa.Close(context.Background()) }()
	waitUntil(t, "a is no longer a key", func() bool { return h.k.member("a") == nil })
	if !pending(b) {
		t.Fatal("b was served while a's object was out")
	}
	h.giveBack(a)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	h.giveBack(h.served(b))
	h.add("a", Config{}) // again
	if s := h.k.Stats(); s.Keys["a"].Total != 0 || s.Destroys.Closed != 1 {
		t.Fatalf("stats %+v; want a new key a, a's old object destroyed as closed", s)
	}
}

// Each key backs off on its own while its creations fail: a Take of the
// failing key fails at once while it is held back (nothing of it alive), the
// other key is served, and the budget's one timer ends the backoff.
func TestKeyedKeysBackOffOnTheirOwn(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 4})
	failing := &fakeFactory{}
	refused := errors.New("connection refused")
	failing.createErr = refused
	h.addOf("down", factoryOf[*fakeObj](failing), Config{})
	h.add("up", Config{})
	if _, err := h.k.Take(context.Background(), "down"); !errors.Is(err, refused) {
		t.Fatalf("Take = %v, want the creation's error", err)
	}
	waitUntil(t, "down backs off", func() bool { return h.k.Stats().Keys["down"].NextCreateAttempt.After(h.clk.Now()) })
	h.giveBack(h.take("up")) // not held back

	failing.set(func(f *fakeFactory) { f.createErr = nil })
	attempts := failing.attempts.Load()
	var ce *CreateError
	if _, err := h.k.Take(context.Background(), "down"); !errors.As(err, &ce) || !ce.FailedFast || !errors.Is(err, refused) {
		t.Fatalf("Take while down is held back = %v, want the last failure, failed fast", err)
	}
	if failing.attempts.Load() != attempts {
		t.Fatal("a creation was attempted before the backoff ended")
	}
	h.clk.Advance(h.k.member("down").Config().BackoffMax)
	h.ev.wait(t, "retry", 1)
	h.giveBack(h.take("down"))
	if s := h.k.Stats(); s.Keys["down"].Creates != 1 || s.Keys["down"].CreateFailuresInARow != 0 || s.CreateFailures != 1 {
		t.Fatalf("stats %+v; want down recovered with 1 creation after 1 failure", s)
	}
	if live := failing.live.Load(); live != 1 {
		t.Fatalf("down has %d objects, want 1", live)
	}
	h.k.StartClose()
	waitUntil(t, "down's object is destroyed", func() bool { return failing.live.Load() == 0 })
}

func TestKeyedConfigErrors(t *testing.T) {
	if _, err := NewKeyed(KeyedConfig[string, int]{MaxObjects: -1}); !isConfigError(err, "MaxObjects") {
		t.Fatalf("NewKeyed(MaxObjects -1) = %v, want a *resilience.ConfigError on MaxObjects", err)
	}
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 4, MaxQueueSize: 8})
	for _, c := range []struct {
		field string
		cfg   Config
	}{
		{"MaxObjects", Config{MaxObjects: 5}},
		{"MaxQueueSize", Config{MaxQueueSize: 7}},
		{"ValidationInterval", Config{ValidationInterval: time.Hour}},
		{"Clock", Config{Clock: clock.System()}},
		{"MinIdle", Config{MinIdle: 5}},
		{"MaxLifetime", Config{MaxLifetime: -1}},
	} {
		if _, err := h.k.Add("x", factoryOf[*fakeObj](h.f), c.cfg); !isConfigError(err, c.field) {
			t.Errorf("Add with %+v = %v, want a *resilience.ConfigError on %s", c.cfg, err, c.field)
		}
	}
	// The Keyed's own values are accepted.
	h.add("a", Config{MaxObjects: 4, MaxQueueSize: 8, Clock: h.clk})
	if _, err := h.k.Add("a", factoryOf[*fakeObj](h.f), Config{}); !errors.Is(err, ErrKeyExists) {
		t.Fatalf("Add of a key twice = %v, want ErrKeyExists", err)
	}
	if _, err := h.k.Add("b", Factory[*fakeObj]{}, Config{}); !isConfigError(err, "Factory.Create") {
		t.Fatalf("Add with a nil factory = %v, want a *resilience.ConfigError on Factory.Create", err)
	}
}

func isConfigError(err error, field string) bool {
	var ce *resilience.ConfigError
	return errors.As(err, &ce) && ce.Field == field
}

// NewKey makes a key's factory on its first Take: one factory that takes
// the key.
func TestKeyedNewKeyMakesKeysOnFirstTake(t *testing.T) {
	f := &fakeFactory{}
	var made []string
	cfg := KeyedConfig[string, *fakeObj]{MaxObjects: 2, NewKey: func(key string) (Factory[*fakeObj], Config, error) {
		if key == "bad" {
			return Factory[*fakeObj]{}, Config{}, errors.New("no such service")
		}
		made = append(made, key) // one caller at a time here
		return factoryOf[*fakeObj](f), Config{MaxObjects: 1}, nil
	}}
	k, err := NewKeyed(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	hd, err := k.Take(context.Background(), "svc")
	if err != nil {
		t.Fatal(err)
	}
	if err := hd.GiveBack(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Take(context.Background(), "bad"); err == nil || k.member("bad") != nil {
		t.Fatalf("Take of a key NewKey refuses = %v, want its error and no key", err)
	}
	if len(made) != 1 || k.member("svc").Config().MaxObjects != 1 {
		t.Fatalf("NewKey made %v; want svc once, with its Config", made)
	}
}

func TestKeyedHandlesGoBackToTheirKey(t *testing.T) {
	h := newKeyedHarness(t, KeyedConfig[string, *fakeObj]{MaxObjects: 2})
	h.add("a", Config{})
	h.add("b", Config{})
	var zero Handle[*fakeObj]
	if err := zero.Discard(); !errors.Is(err, ErrAlreadyReturned) {
		t.Fatalf("Discard of a zero Handle = %v, want ErrAlreadyReturned", err)
	}
	b := h.take("b")
	if err := b.GiveBack(); err != nil {
		t.Fatal(err)
	}
	if s := h.k.Stats(); s.Keys["b"].Idle != 1 || s.Keys["a"].Total != 0 {
		t.Fatalf("stats %+v; want b's object idle in b", s)
	}
	a := h.take("a")
	if err := a.Discard(); err != nil {
		t.Fatal(err)
	}
	if err := a.GiveBack(); !errors.Is(err, ErrAlreadyReturned) {
		t.Fatalf("GiveBack after Discard = %v, want ErrAlreadyReturned", err)
	}
}
