package pool

import (
	"iter"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DestroyReason says why the pool destroyed an object.
type DestroyReason int

// The reasons an object is destroyed.
const (
	DestroyInvalid    DestroyReason = iota // failed Validate on take or give-back
	DestroyIdle                            // idle longer than MaxIdle
	DestroyLifetime                        // older than its lifetime
	DestroyTestFailed                      // failed or timed out its Test
	DestroyDiscarded                       // handed back with Discard
	DestroyLeaked                          // its Handle was lost (LEAK-DETECTED)
	DestroyClosed                          // the pool was closed
	DestroyLate                            // created after CreateTimeout had failed its creation
	DestroyRejected                        // refused by a hook (AfterCreate, BeforeHandOut, AfterGiveBack)
	DestroyEvicted                         // a Keyed's idle object, least recently used, destroyed to free a slot for another key's callers
	DestroyYielded                         // a Keyed's object given back while another key's callers waited for the budget: its slot went to them
	numDestroyReasons
)

var destroyReasonNames = [numDestroyReasons]string{
	"invalid", "idle", "lifetime", "test_failed", "discarded", "leaked", "closed", "late", "rejected",
	"evicted", "yielded",
}

func (r DestroyReason) String() string {
	if r < 0 || r >= numDestroyReasons {
		return "unknown"
	}
	return destroyReasonNames[r]
}

// Stats is a snapshot of a pool. Gauges are read one at a time while the pool
// runs, so they may disagree by an object in flight; counters only grow.
type Stats struct {
	MaxObjects int
	// EffectiveMaxObjects is the most objects the pool makes now:
	// MaxObjects, or fewer while back-pressure (Config.BackPressure) holds
	// it down to the objects the server accepted.
	EffectiveMaxObjects int
	Total               int // objects alive, counting those being created and tested
	Idle                int
	InUse               int // held by callers
	Creating            int
	Testing             int // under Test, or under the AfterGiveBack hook
	Waiting             int // callers waiting for an object
	Queued              int // of those, the ones waiting for a give-back (bounded by MaxQueueSize), not for a creation of their own

	Takes           uint64        // successful Takes and TryTakes
	Waits           uint64        // Takes that had to wait
	WaitTime        time.Duration // total time those Takes waited
	QueueFull       uint64        // Takes refused with ErrQueueFull
	CancelledWaits  uint64        // Takes whose context ended while waiting
	AcquireTimeouts uint64        // Takes ended by Config.AcquireTimeout
	Creates         uint64
	CreateFailures  uint64
	Destroys        DestroyCounts // objects destroyed, by reason
	LeaksDetected   uint64        // lost Handles reclaimed
	HeldTooLong     uint64        // Handles reported past Config.HoldThreshold

	// Creations while they fail (Config.BackoffInitial and after).
	CreateFailuresInARow int       // 0 once a creation succeeds
	NextCreateAttempt    time.Time // while creations are held back (on Config.Clock), else zero
	LastCreateError      error     // the last creation failure, as the factory returned it (nil if none yet)
	LastCreateErrorAt    time.Time
	FailedFast           uint64 // Takes failed at once with a *CreateError: their deadline came before the next attempt, or a retry time was in force
	BackPressureEvents   uint64 // creation errors Config.BackPressure recognised
	Overloaded           uint64 // Takes failed fast by the overload policy (ErrOverloaded)
	// MeanHold is the overload policy's measure of how long objects are
	// held while callers wait for them (zero until measured).
	MeanHold time.Duration

	// WaitHistogram is how long Takes waited, including those served at once.
	WaitHistogram Histogram
}

// Destroyed is the number of objects destroyed for reason r
// (s.Destroys.Of(r)).
func (s Stats) Destroyed(r DestroyReason) uint64 { return s.Destroys.Of(r) }

// DestroyCounts counts destroyed objects by reason.
type DestroyCounts struct {
	n [numDestroyReasons]uint64
}

// Of is the number of objects destroyed for reason r; 0 for a reason this
// version does not know.
func (d DestroyCounts) Of(r DestroyReason) uint64 {
	if r < 0 || r >= numDestroyReasons {
		return 0
	}
	return d.n[r]
}

// Total is the number of objects destroyed for any reason.
func (d DestroyCounts) Total() uint64 {
	var t uint64
	for _, n := range d.n {
		t += n
	}
	return t
}

// All yields every reason, in the order of their constants, with its count
// (zero counts included), for exporting them as labelled metrics.
func (d DestroyCounts) All() iter.Seq2[DestroyReason, uint64] {
	return func(yield func(DestroyReason, uint64) bool) {
		for r, n := range d.n {
			if !yield(DestroyReason(r), n) {
				return
			}
		}
	}
}

// String lists the non-zero counts as reason=count, for example
// "idle=3 discarded=1"; "none" when nothing was destroyed.
func (d DestroyCounts) String() string {
	var b strings.Builder
	for r, n := range d.All() {
		if n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(r.String())
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(n, 10))
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// counters are the pool's cumulative counters; any goroutine may add.
type counters struct {
	queueFull, cancelled, acquireTimeout atomic.Uint64
	failedFast, backPressure, overloaded atomic.Uint64
	creates, createFailures, leaks, held atomic.Uint64
	untaken                              atomic.Uint64 // idle entries popped by Take or TryTake but not handed out
	destroys                             [numDestroyReasons]atomic.Uint64
}

// Stats returns a snapshot of the pool's gauges and counters. It reads them
// without asking the actor, and works after Close.
//
// Takes are counted where they happen, so that the fast path shares no
// counter: under each shard's lock for the objects popped there, per P for
// those taken from the queue and for waits.
func (p *Pool[T]) Stats() Stats {
	c := &p.counters
	idle, shardTakes := p.idle.counts()
	s := Stats{
		MaxObjects:          p.cfg.MaxObjects,
		EffectiveMaxObjects: int(p.limit.Load()),
		FailedFast:          c.failedFast.Load(),
		BackPressureEvents:  c.backPressure.Load(),
		Overloaded:          c.overloaded.Load(),
		MeanHold:            time.Duration(p.overload.hold.Load()),
		Total:               int(p.total.Load()),
		Idle:                idle + p.queuedEntries(),
		Creating:            int(p.creating.Load()),
		Testing:             int(p.testing.Load() + p.checking.Load()),
		Waiting:             int(p.waiting.Load()),
		Queued:              int(p.queued.Load()),
		QueueFull:           c.queueFull.Load(),
		CancelledWaits:      c.cancelled.Load(),
		AcquireTimeouts:     c.acquireTimeout.Load(),
		Creates:             c.creates.Load(),
		CreateFailures:      c.createFailures.Load(),
		LeaksDetected:       c.leaks.Load(),
		HeldTooLong:         c.held.Load(),
	}
	if f := p.failure.Load(); f != nil {
		s.CreateFailuresInARow = f.failures
		s.NextCreateAttempt = p.timeAt(f.retryAt)
		s.LastCreateError = f.err
		s.LastCreateErrorAt = p.timeAt(f.at)
	}
	for i := range s.Destroys.n {
		s.Destroys.n[i] = c.destroys[i].Load()
	}
	s.InUse = max(0, s.Total-s.Idle-s.Creating-s.Testing-int(p.destroying.Load()))
	var queueTakes uint64
	for i := range p.waitStats {
		queueTakes += p.waitStats[i].queueTakes.Load()
	}
	s.Waits, s.WaitTime, s.WaitHistogram = waitSnapshot(p.waitStats)
	s.Takes = shardTakes + queueTakes + s.Waits - min(c.untaken.Load(), shardTakes+queueTakes)
	s.WaitHistogram.Counts[0] += s.Takes - min(s.Takes, s.Waits) // Takes served at once
	return s
}
