package pool

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
)

// The budget of a Keyed.
//
// Each key of a Keyed is a Pool of its own in every respect but two: its
// actor does not run alone, and its slots come out of one budget. One
// goroutine, the budget's loop (run), runs the actors of every key: they
// share its mailbox, and each message names its pool (Pool.send), so the
// loop hands it to that key's actor; the tick, the creation gates' timer and
// garbage collections reach every key. So each key keeps the Pool's fast
// paths (its shards, its queue channel, its waiting count) and its
// decisions (creations, back-off, back-pressure, tests, MinIdle), and the
// loop, which sees every key, makes the decisions that need them all.
//
// A key takes a slot only when its own capacity (its MaxObjects, or
// back-pressure's limit) and the budget (the Keyed's MaxObjects across every
// key) both have one free (actor.budgetFree). A request for a creation that
// its key could serve but the budget cannot becomes a claim, and claims wait
// across keys: every slot the budget frees goes to a claim of the key that
// holds fewest slots, the oldest of its claims (next, grant), so claims of
// keys holding as many are served in FIFO order. Callers queued in a key for
// a give-back (their key was at its own capacity) whose key then has room
// but the budget none are claimed for too, one claim per caller, served by
// a slot marker to the key's queue: a key under constant load claims for
// its callers as soon as it is below its own cap, and its claims, older
// than those of a key that holds less, must not keep the budget from it.
//
// While claims wait and no destruction under way will free a slot for each
// (need), the budget is found among the other keys:
//
//   - an idle object of a key nobody of that key waits for, and which has
//     more idle than its MinIdle, is evicted: the least recently used first
//     (by the pool's coarse clock: ties go to the key with the most idle to
//     spare), destroyed as evicted (DestroyCounts.Evicted);
//   - an object given back to a key while claims wait goes to the loop
//     (putIdle: a message, never on the fast path otherwise) and is
//     destroyed as yielded (DestroyCounts.Yielded), if nobody of its key waits for it and the
//     key keeps its MinIdle, or if its key holds more than one object more
//     than the key of the claim served next: so a key under constant load
//     cannot starve another of the budget, which flows from the key holding
//     most to the one waiting until they hold about as many (max-min
//     fairness). Otherwise it goes to its key's waiters, as in a Pool.
//
// The loop publishes whether claims wait unserved (starving) and, per key,
// whether its give-backs should go to the loop (Pool.yields), so that a
// give-back reads one atomic more than a Pool's while no claim waits.
//
// Every caller waiting for a give-back in any key, and every claim of a
// caller, counts against the one MaxQueueSize, in one count (waiting) that
// each adds itself to before it compares: of two callers arriving together
// for the last place, one is refused. A claim is counted until it is served
// or its caller leaves, whichever comes first (waiter.claim: uncount,
// unclaim): a caller that gives up frees its place at once, not when the
// loop next looks.

// claim is a request for a slot of the budget.
type claim[T any] struct {
	a *actor[T]
	// w is the caller whose creation waits for the budget; nil: a slot for
	// one of a's queued callers, or, with try, for a creation that a
	// TryTake of a's key asked for (see tryClaim).
	w   *waiter[T]
	try bool
}

// budget is what the keys of a Keyed share, and the loop that runs their
// actors.
type budget[T any] struct {
	// Immutable.
	max, maxQueue int
	interval      time.Duration
	clk           clock.Clock
	sysClock      bool
	hook          func(string) // tests only: called after each event is handled
	forget        func(*Pool[T])
	retire        func(*Pool[T])

	// afterEvict, when set (tests only), is called by the loop after its
	// eviction scan (settle), before it publishes what callers read: tests
	// hold the loop there to force an interleaving.
	afterEvict atomic.Pointer[func()]

	mailbox      chan message[T]
	keyClosed    chan struct{} // a key began closing (buffered 1)
	closing      chan struct{} // closed by Keyed.StartClose
	closeStarted chan struct{} // closed by the loop once every key is closing
	done         chan struct{} // closed by the loop when the last key is gone

	adds atomic.Int64 // keys added (their msgAddKey sent); written under the Keyed's lock

	// The loop's.
	keys         []*actor[T]
	actors       map[*Pool[T]]*actor[T]
	registered   int64 // keys whose msgAddKey has arrived
	total        int   // slots taken by every key
	claims       []claim[T]
	tries        int  // claims with try
	freed        bool // a slot was freed since the last settle: refill every key
	gatesChanged bool // a key's gate was held or released: arm gateTimer again
	gateTimer    clock.Timer
	gateC        <-chan time.Time
	gateAt       int64
	closingAll   bool

	// Published by the loop.
	totalNow atomic.Int64
	starving atomic.Bool // claims wait that no destruction under way will serve

	// Written by callers and the loop: waiting counts the callers queued
	// for a give-back in every key and the claims of callers counted
	// (waiter.claim), against MaxQueueSize; waiters counts those claims.
	waiting, waiters atomic.Int64
}

// newBudget makes the budget of a Keyed configured by cfg, with defaults.
func newBudget[K comparable, T any](cfg KeyedConfig[K, T], hook func(string)) *budget[T] {
	return &budget[T]{
		max:          cfg.MaxObjects,
		maxQueue:     cfg.MaxQueueSize,
		interval:     cfg.ValidationInterval,
		clk:          cfg.Clock,
		sysClock:     resil.IsSystem(cfg.Clock),
		hook:         hook,
		mailbox:      make(chan message[T], mailboxSize),
		keyClosed:    make(chan struct{}, 1),
		closing:      make(chan struct{}),
		closeStarted: make(chan struct{}),
		done:         make(chan struct{}),
		actors:       make(map[*Pool[T]]*actor[T]),
	}
}

func (b *budget[T]) clock() int64 { return readClock(b.sysClock, b.clk) }

// run is the loop: it runs every key's actor, and the budget's decisions
// after every event.
func (b *budget[T]) run() {
	ticker := b.clk.NewTicker(b.interval)
	defer ticker.Stop()
	closing := b.closing
	for {
		var ev string
		select {
		case m := <-b.mailbox:
			ev = b.handle(m)
		case <-ticker.C():
			now := b.clock()
			for _, a := range b.keys {
				a.tick(now)
			}
			ev = "tick"
		case <-b.gateC:
			b.gateC, b.gateAt = nil, 0
			now := b.clock()
			for _, a := range b.keys {
				if a.gate.held && a.gate.retryAt <= now {
					a.onRetryDue()
				}
			}
			b.gatesChanged = true
			ev = "retry"
		case <-b.keyClosed:
			b.startCloses()
			ev = "close"
		case <-closing:
			closing = nil // handled once
			b.closingAll = true
			b.startCloses()
			close(b.closeStarted)
			ev = "close"
		}
		b.settle()
		if b.hook != nil {
			b.hook(ev)
		}
		b.finishKeys()
		if b.closingAll && len(b.keys) == 0 && b.registered == b.adds.Load() {
			b.stopGateTimer()
			close(b.done)
			return
		}
	}
}

func (b *budget[T]) handle(m message[T]) string {
	switch m.kind {
	case msgGC:
		for _, a := range b.keys {
			a.watchLeases()
		}
		return "gc"
	case msgAddKey:
		b.register(m.p)
		return "add"
	}
	a := b.actors[m.p]
	if a == nil {
		// A key gone (closed, and every object destroyed) still hears from
		// callers that saw it open: a request for a creation, a poke. As a
		// Pool's actor would, had it waited: the pool is closed.
		if m.w != nil {
			m.w.deliver(created[T]{err: ErrClosed})
		}
		return "gone"
	}
	if m.kind == msgYield {
		b.onYield(a, m.e)
		return "yield"
	}
	return a.handle(m)
}

// register makes p, a new key, one of the loop's.
func (b *budget[T]) register(p *Pool[T]) {
	a := newActor(p, nil)
	b.keys = append(b.keys, a)
	b.actors[p] = a
	b.registered++
	a.needRefill = true
	if p.closed.Load() { // closed before its message arrived
		a.startClose()
	}
}

// startCloses starts closing every key whose pool has been closed.
func (b *budget[T]) startCloses() {
	for _, a := range b.keys {
		if !a.closing && a.p.closed.Load() {
			a.startClose()
		}
	}
}

// finishKeys lets go of the keys that have finished closing.
func (b *budget[T]) finishKeys() {
	kept := b.keys[:0]
	for _, a := range b.keys {
		// A key is let go of once closed, its last slot free and its last
		// caller gone (lastLeft), so that nothing counts in its Stats after
		// they are retired.
		if !a.closing || a.total > 0 || a.p.waiting.Load() > 0 {
			kept = append(kept, a)
			continue
		}
		a.p.wg.Wait() // every goroutine of the key has sent its last message
		close(a.p.done)
		delete(b.actors, a.p)
		b.retire(a.p)
	}
	clear(b.keys[len(kept):])
	b.keys = kept
}

// settle does what follows every event, for the budget and then for every
// key: claims first, in their order, then each key's queued callers, then
// MinIdle, then the budget found for the claims left.
func (b *budget[T]) settle() {
	if b.freed {
		b.freed = false
		for _, a := range b.keys {
			a.needRefill = true
		}
	}
	b.purge()
	b.grant()
	for _, a := range b.keys {
		a.publishCapacity()
		a.offerSlots()
	}
	for _, a := range b.keys {
		if a.needRefill {
			a.needRefill = false
			a.refill()
		}
	}
	if b.total >= b.max {
		b.claimQueued()
	}
	// Whether claims starve is stored before the scan for idle objects to
	// evict: a give-back that read it false before looks again once its
	// object is idle (putIdle), so either the scan finds the object or the
	// giver pokes the loop, which looks again.
	b.setStarving(b.need() > 0)
	b.evict()
	if f := b.afterEvict.Load(); f != nil {
		(*f)()
	}
	b.grant() // evict may have found slot markers to take back
	for _, a := range b.keys {
		a.publishCapacity()
		a.publishSurplus()
		a.p.wakeIfNeeded()
	}
	b.publish()
	b.armGates()
}

// setTotal sets the slots taken by every key; actor.setTotal calls it.
func (b *budget[T]) setTotal(n int) {
	if n < b.total {
		b.freed = true
	}
	b.total = n
	b.totalNow.Store(int64(n))
}

// full reports whether every slot of the budget is taken.
func (b *budget[T]) full() bool { return b.totalNow.Load() >= int64(b.max) }

// queue adds d to the callers waiting against MaxQueueSize (a caller
// queued for a give-back) and returns how many wait now.
func (b *budget[T]) queue(d int64) int64 { return b.waiting.Add(d) }

// starve makes w's request for a creation in a's key, which the key could
// serve but the budget cannot, a claim; or refuses it when MaxQueueSize
// callers wait already.
func (b *budget[T]) starve(a *actor[T], w *waiter[T]) {
	if n := b.waiting.Add(1); n > int64(b.maxQueue) {
		b.waiting.Add(-1)
		a.p.counters.queueFull.Add(1)
		w.deliver(created[T]{err: &queueFullError{Waiting: int(n - 1), MaxQueueSize: b.maxQueue, MaxObjects: b.max}})
		return
	}
	if !w.claim.CompareAndSwap(claimNone, claimCounted) { // its caller has left
		b.waiting.Add(-1)
		return
	}
	b.waiters.Add(1)
	b.claims = append(b.claims, claim[T]{a: a, w: w})
}

// uncount stops counting w's claim, served or dropped, if its caller has
// not already (unclaim); the loop calls it. The caller may claim again (a
// creation it was granted fails, and the budget is spent by the next
// attempt).
func (b *budget[T]) uncount(w *waiter[T]) {
	if w.claim.CompareAndSwap(claimCounted, claimNone) {
		b.waiting.Add(-1)
		b.waiters.Add(-1)
	}
}

// unclaim stops counting w's claim, if the loop has not already (uncount),
// and makes sure it is never counted again: w's caller calls it when it
// leaves.
func (b *budget[T]) unclaim(w *waiter[T]) {
	if w.claim.Swap(claimLeft) == claimCounted {
		b.waiting.Add(-1)
		b.waiters.Add(-1)
	}
}

// tryClaim claims a slot for a creation for nobody in particular, asked for
// by a TryTake of a's key that found nothing idle while the budget is spent,
// as Pool.TryTake starts one below MaxObjects: so that a later TryTake
// finds an object. It is served after the callers' claims, by free slots
// and by evicting other keys' idle objects, never by give-backs (nobody
// waits for it), and dropped once the key has an object idle or on its way.
// A key has one at a time; it does not count against MaxQueueSize.
func (b *budget[T]) tryClaim(a *actor[T]) {
	if !a.tryClaimed {
		a.tryClaimed = true
		b.tries++
		b.claims = append(b.claims, claim[T]{a: a, try: true})
	}
}

// wantsTry reports whether a TryTake's claim of a's key is still wanted:
// nothing idle or on its way, and a creation could start but for the
// budget.
func (a *actor[T]) wantsTry() bool {
	return a.anon == 0 && a.p.idleCount() == 0 && a.mayCreate()
}

// unserved is how many of a's queued callers may have a slot of the
// budget: none while the key is at its own capacity (they wait for its
// give-backs), else those not offered one yet.
func (a *actor[T]) unserved() int {
	if a.closing || a.total >= a.capacity() {
		return 0
	}
	return max(0, int(a.p.queued.Load())-a.offered)
}

// claimQueued claims a slot for each queued caller of a key that has room
// while the budget has none.
func (b *budget[T]) claimQueued() {
	for _, a := range b.keys {
		for n := a.unserved(); a.claimed < n; a.claimed++ {
			b.claims = append(b.claims, claim[T]{a: a})
		}
	}
}

// purge drops the claims nobody needs any more: of callers that have left
// (or been served by a give-back) or whose key is closing (those are told),
// and a key's claims beyond its unserved queued callers, newest first.
func (b *budget[T]) purge() {
	for _, a := range b.keys {
		a.excessClaims = max(0, a.claimed-a.unserved())
	}
	drop := func(c claim[T]) bool {
		if c.try {
			if c.a.wantsTry() {
				return false
			}
			c.a.tryClaimed = false
			b.tries--
			return true
		}
		if c.w == nil {
			if c.a.excessClaims == 0 {
				return false
			}
			c.a.excessClaims--
			c.a.claimed--
			return true
		}
		if c.w.state.Load() == waiterWaiting && !c.a.closing {
			return false
		}
		b.uncount(c.w)
		c.w.deliver(created[T]{err: ErrClosed}) // its key is closing, unless the caller has left
		return true
	}
	n := 0
	for i := len(b.claims) - 1; i >= 0; i-- { // newest first
		if drop(b.claims[i]) {
			b.claims[i] = claim[T]{}
			n++
		}
	}
	if n > 0 {
		kept := b.claims[:0]
		for _, c := range b.claims {
			if c.a != nil {
				kept = append(kept, c)
			}
		}
		clear(b.claims[len(kept):])
		b.claims = kept
	}
}

// next returns the index of the claim for callers the budget serves next,
// or -1 if none waits: the oldest claim of the key that holds fewest slots
// (see the comment at the top). TryTake's claims come after.
func (b *budget[T]) next() int {
	i := -1
	for j, c := range b.claims {
		if c.try {
			continue
		}
		if i < 0 || c.a.total < b.claims[i].a.total {
			i = j
			if c.a.total == 0 {
				break // none holds fewer
			}
		}
	}
	return i
}

// grant gives the budget's free slots to the claims, in their order (next),
// then to TryTake's, oldest first.
func (b *budget[T]) grant() {
	for len(b.claims) > 0 && b.total < b.max {
		i := b.next()
		if i < 0 {
			i = slices.IndexFunc(b.claims, func(c claim[T]) bool { return c.try })
		}
		c := b.claims[i]
		b.claims = slices.Delete(b.claims, i, i+1)
		a := c.a
		if c.try {
			b.tries--
			a.tryClaimed = false
			if a.wantsTry() {
				a.createForNobody()
			}
			continue
		}
		if c.w == nil {
			a.claimed--
			if a.unserved() > 0 {
				a.offerSlot()
			}
			continue
		}
		b.uncount(c.w)
		switch {
		case c.w.state.Load() != waiterWaiting:
		case a.total >= a.capacity(): // its key filled up meanwhile
			c.w.deliver(created[T]{full: true})
		default:
			a.setTotal(a.total + 1)
			a.pending = append(a.pending, request[T]{w: c.w, reserved: true})
			a.startCreates()
		}
	}
	if len(b.claims) == 0 {
		b.claims = b.claims[:0:0] // let the array go: claims come in bursts
	}
}

// needAll is how many claims no destruction under way will serve.
func (b *budget[T]) needAll() int {
	n := len(b.claims)
	for _, a := range b.keys {
		n -= int(a.p.destroying.Load())
	}
	return n
}

// need is how many claims for callers no destruction under way will serve
// (the destructions serve them first).
func (b *budget[T]) need() int { return b.needAll() - b.tries }

// evict destroys idle objects of other keys, least recently used first,
// for the claims no destruction under way will serve.
func (b *budget[T]) evict() {
	for b.needAll() > 0 {
		e, a := b.leastRecentlyUsed()
		if e == nil {
			return
		}
		a.p.destroy(e, reasonEvicted)
	}
}

// leastRecentlyUsed takes out of its shard, and returns, the idle object
// given back longest ago among the keys that may spare one: not closing,
// nobody of the key waiting, more idle than the key's MinIdle. Ties go to
// the key with the most to spare. It returns nil if there is none.
func (b *budget[T]) leastRecentlyUsed() (*entry[T], *actor[T]) {
	for range 3 { // an entry taken meanwhile by its key's caller: look again
		var (
			best      *entry[T]
			bestSince int64
			bestKey   *actor[T]
			bestShard int
			bestSpare int
		)
		for _, a := range b.keys {
			p := a.p
			if a.closing || p.closed.Load() || p.waiting.Load() != 0 {
				continue
			}
			a.shelveQueued()
			spare := p.idleCount() - a.minIdle
			if spare <= 0 {
				continue
			}
			for i := range p.idle.shards {
				e, since := p.idle.shards[i].bottom()
				if e != nil && (best == nil || since < bestSince || (since == bestSince && spare > bestSpare)) {
					best, bestSince, bestKey, bestShard, bestSpare = e, since, a, i, spare
				}
			}
		}
		if best == nil {
			return nil, nil
		}
		if bestKey.p.idle.shards[bestShard].removeBottom(best) {
			return best, bestKey
		}
	}
	return nil, nil
}

// shelveQueued moves the idle objects left in the key's queue channel by
// callers that have stopped waiting to its shards, where eviction finds
// them, and takes back the slot markers left there.
func (a *actor[T]) shelveQueued() {
	p := a.p
	for n := len(p.queue); n > 0; n-- {
		select {
		case e := <-p.queue:
			switch e.kind {
			case kindWake:
				p.queue <- e
			case kindSlot:
				a.takeBackSlot()
			default:
				p.pushIdle(e)
			}
		default:
			return
		}
	}
}

// yielding reports whether p's give-backs go to the loop (putIdle): claims
// wait, and nobody of the key waits or the key holds more than its share.
func (b *budget[T]) yielding(p *Pool[T]) bool {
	return b.starving.Load() && (p.waiting.Load() == 0 || p.yields.Load())
}

// onYield decides the fate of e, given back to a's key while claims waited
// (see the comment at the top).
func (b *budget[T]) onYield(a *actor[T], e *entry[T]) {
	p := a.p
	b.purge()
	switch {
	case a.closing || p.closed.Load():
		p.destroy(e, reasonClosed)
	case b.yieldFrom(a):
		p.destroy(e, reasonYielded)
	default:
		p.pushIdle(e)
	}
}

// yieldFrom reports whether an object given back to a's key goes to the
// claim served next.
func (b *budget[T]) yieldFrom(a *actor[T]) bool {
	if b.need() <= 0 {
		return false
	}
	head := b.claims[b.next()].a
	if head == a {
		return false
	}
	if a.p.waiting.Load() == 0 {
		return a.p.idleCount() >= a.minIdle
	}
	return a.total > head.total+1
}

// publish stores what callers read of the budget.
func (b *budget[T]) publish() {
	need := b.need()
	b.setStarving(need > 0)
	var head *actor[T]
	if i := b.next(); i >= 0 {
		head = b.claims[i].a
	}
	for _, a := range b.keys {
		y := need > 0 && a != head && a.total > head.total+1
		if a.p.yields.Load() != y { // stored only when it changes: callers read it
			a.p.yields.Store(y)
		}
	}
}

// setStarving stores whether claims starve, only when it changes: callers
// read it.
func (b *budget[T]) setStarving(starving bool) {
	if b.starving.Load() != starving {
		b.starving.Store(starving)
	}
}

// idled is called by a caller that made an object of p's key idle without
// yielding it (putIdle), and by one that stopped waiting, leaving p's key
// with no caller waiting (stopWaiting): if claims starve, the loop may have
// looked for idle objects to evict before the object was idle or before the
// key had nobody waiting, so it is poked to look again. A key with callers
// waiting keeps its idle objects for them, and the last of them to leave
// pokes.
func (b *budget[T]) idled(p *Pool[T]) {
	if b.starving.Load() && p.waiting.Load() == 0 {
		p.poke()
	}
}

// lastLeft is called by the last caller to stop waiting in p's key: a
// closed key is let go of only once nobody waits in it (finishKeys), and
// the loop is poked to look again; otherwise see idled.
func (b *budget[T]) lastLeft(p *Pool[T]) {
	if p.closed.Load() {
		p.poke()
		return
	}
	b.idled(p)
}

// armGates sets the one timer of every key's creation gate to the earliest
// retry due.
func (b *budget[T]) armGates() {
	if !b.gatesChanged {
		return
	}
	b.gatesChanged = false
	var at int64
	for _, a := range b.keys {
		if g := &a.gate; g.held && (at == 0 || g.retryAt < at) {
			at = g.retryAt
		}
	}
	if at == b.gateAt && b.gateC != nil {
		return
	}
	b.stopGateTimer()
	if at == 0 {
		return
	}
	b.gateTimer = b.clk.NewTimer(time.Duration(at - b.clock()))
	b.gateC, b.gateAt = b.gateTimer.C(), at
}

func (b *budget[T]) stopGateTimer() {
	if b.gateTimer != nil {
		b.gateTimer.Stop()
	}
	b.gateTimer, b.gateC, b.gateAt = nil, nil, 0
}

// keyClosing is called once by p's StartClose: the Keyed forgets the key,
// and the loop starts closing it.
func (b *budget[T]) keyClosing(p *Pool[T]) {
	b.forget(p)
	select {
	case b.keyClosed <- struct{}{}:
	default: // the loop has yet to look: it will see p too
	}
}

// maxObjectsNow is the most objects p may have now: its effective
// MaxObjects, and in a Keyed no more than the budget.
func (p *Pool[T]) maxObjectsNow() int {
	n := int(p.limit.Load())
	if b := p.keyed; b != nil {
		n = min(n, b.max)
	}
	return n
}
