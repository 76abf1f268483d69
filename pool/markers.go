package pool

// Waiting and the markers.
//
// A caller that finds no idle object counts itself in waiting (so that the
// fast path of later callers queues behind it instead of overtaking) and
// then either asks the actor for a creation of its own, when the pool is
// below MaxObjects and nobody waits for a give-back, or counts itself in
// queued and waits for an object to be given back. Only the queued callers
// count against MaxQueueSize. Every waiter receives from queue, so each
// object given back goes to the one that has waited longest.
//
// Besides objects, queue carries markers, entries that are never handed out:
//
//   - Slot markers. When a slot frees while callers are queued (a destroy, a
//     failed creation, a reservation given up), the actor keeps the slot
//     (total does not drop) and sends a slot marker to queue, one per queued
//     caller at most: the longest waiter receives it and turns it into a
//     creation of its own. A newcomer meanwhile sees the pool full, or
//     callers queued, and queues behind: a freed slot serves the waiters in
//     their order. Whoever else receives a slot marker uses it (a Take from
//     the fast path turns it into its creation, TryTake into a creation for
//     nobody in particular) or hands it back to the actor (a caller with a
//     creation of its own already, Close), and the tick takes back those
//     left in queue, so a slot is never lost.
//   - The close marker (Pool.wake): once the pool is closed, it wakes the
//     longest waiter, which returns ErrClosed and passes it on.
//
// No wake-up is lost. A caller counts itself in queued and then loads total
// and capacity; the actor, freeing a slot or raising capacity, stores total
// and capacity and then loads queued (offerSlots).
// Either the actor sees the caller and offers it a slot, or the caller sees
// the slot free and pokes the actor, whose offerSlots, run after every event,
// then sees it. Likewise the close marker: callers count themselves in
// waiting before they look at closed, and Close stores closed before the
// actor's wakeIfNeeded loads waiting.
//
// queue never blocks a sender: its capacity is MaxObjects+1, and it holds at
// most the entries alive and the slot markers, which together take at most
// MaxObjects slots, and the one close marker.

type entryKind uint8

const (
	kindObject entryKind = iota // a pooled object
	kindWake                    // the close marker, Pool.wake
	kindSlot                    // a slot marker: a free slot for its receiver
)

// idleCount is the number of idle entries: those in the shards and in
// queue.
func (p *Pool[T]) idleCount() int {
	m, _ := p.idle.counts()
	return m + p.queuedEntries()
}

// queuedEntries is the number of entries in queue, not counting markers
// (it may be off by a marker in flight).
func (p *Pool[T]) queuedEntries() int {
	n := len(p.queue) - int(p.offered.Load())
	if p.wakeOut.Load() {
		n--
	}
	return max(n, 0)
}

// wakeIfNeeded sends the close marker to queue when the pool is closed and
// callers wait. The actor calls it after every event, and so does every
// caller leaving takeSlow.
func (p *Pool[T]) wakeIfNeeded() {
	if p.closed.Load() && p.waiting.Load() > 0 && p.wakeOut.CompareAndSwap(false, true) {
		p.queue <- p.wake // never blocks
	}
}

// send sends m, from p, to the actor.
func (p *Pool[T]) send(m message[T]) {
	m.p = p
	p.mailbox <- m
}

// returnSlots hands n slot markers that cannot be used back to the actor,
// which frees the slots or offers them again. It blocks until the actor has
// them: the actor runs while any slot is taken.
func (p *Pool[T]) returnSlots(n int) {
	for range n {
		p.send(message[T]{kind: msgSlot})
	}
}

// poke asks the actor to offer the free slots to the queued callers; it
// does not wait, since the actor offers them after every event anyway.
func (p *Pool[T]) poke() {
	select {
	case p.mailbox <- message[T]{kind: msgPoke, p: p}:
	default:
	}
}
