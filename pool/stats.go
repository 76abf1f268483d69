package pool

import (
	"sync/atomic"
	"time"
)

// destroyReason says why the pool destroyed an object: the index of its
// counter, and of its name, which is that of its DestroyCounts field's JSON
// tag (the "reason" of the log lines and Event.Reason).
type destroyReason int

// The reasons an object is destroyed, in the order of DestroyCounts'
// fields.
const (
	reasonInvalid destroyReason = iota
	reasonIdle
	reasonLifetime
	reasonTestFailed
	reasonDiscarded
	reasonLeaked
	reasonClosed
	reasonLate
	reasonRejected
	reasonEvicted
	reasonYielded
	reasonReset
	reasonResized
	numDestroyReasons
)

var destroyReasonNames = [numDestroyReasons]string{
	"invalid", "idle", "lifetime", "test_failed", "discarded", "leaked", "closed", "late", "rejected",
	"evicted", "yielded", "reset", "resized",
}

func (r destroyReason) String() string { return destroyReasonNames[r] }

// Stats is a snapshot of a pool. Gauges are read one at a time while the pool
// runs, so they may disagree by an object in flight; counters only grow.
type Stats struct {
	// Closed is true once Close or StartClose has been called: every Take
	// from then on fails with ErrClosed (for a Keyed: once the Keyed began
	// closing). Health checks read it.
	Closed bool
	// MaxObjects is the size in force: Config.MaxObjects, or the last
	// Resize's.
	MaxObjects int
	// MinIdle is the objects kept idle in force: Config.MinIdle, or the
	// last Resize's.
	MinIdle int
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
	// LastCreateError is the last creation failure (nil if none yet):
	// errors.Is and errors.As find the factory's error in it, and it prints
	// as that error does, but it marshals to JSON as its message (an
	// error's fields may hold funcs, which JSON refuses, or a password).
	LastCreateError    error
	LastCreateErrorAt  time.Time
	FailedFast         uint64 // Takes failed at once with a *CreateError: their deadline came before the next attempt, or a retry time was in force
	BackPressureEvents uint64 // creation errors Config.BackPressure recognised
	Overloaded         uint64 // Takes failed fast by the overload policy (ErrOverloaded)
	// MeanHold is the overload policy's measure of how long objects are
	// held while callers wait for them (zero until measured).
	MeanHold time.Duration

	// WaitHistogram is how long Takes waited, including those served at once.
	WaitHistogram Histogram

	// Budget is the state of Config.Budget when it reports one (see
	// BudgetStats); nil otherwise.
	Budget *BudgetStats
}

// DestroyCounts counts destroyed objects by reason, as sql.DBStats counts
// MaxIdleClosed and MaxLifetimeClosed. Each field's JSON name is the
// reason's stable name: the "reason" of the pool's log lines, Event.Reason,
// the destroys of package health's JSON and the reason label of the
// metrics/prometheus module.
type DestroyCounts struct {
	Invalid    uint64 `json:"invalid"`     // failed Validate on take or give-back
	Idle       uint64 `json:"idle"`        // idle longer than MaxIdle
	Lifetime   uint64 `json:"lifetime"`    // older than its lifetime
	TestFailed uint64 `json:"test_failed"` // failed or timed out its Test
	Discarded  uint64 `json:"discarded"`   // handed back with Discard
	Leaked     uint64 `json:"leaked"`      // its Handle was lost (LEAK-DETECTED)
	Closed     uint64 `json:"closed"`      // the pool was closed
	Late       uint64 `json:"late"`        // created after CreateTimeout had failed its creation
	Rejected   uint64 `json:"rejected"`    // refused by a hook (AfterCreate, BeforeHandOut, AfterGiveBack)
	Evicted    uint64 `json:"evicted"`     // a Keyed's idle object, least recently used, destroyed to free a slot for another key's callers
	Yielded    uint64 `json:"yielded"`     // a Keyed's object given back while another key's callers waited for the budget: its slot went to them
	Reset      uint64 `json:"reset"`       // made before a Reset (idle then, in use then and given back since, or being created then)
	Resized    uint64 `json:"resized"`     // idle, or given back, while the pool held more than a Resize allowed
}

// destroyCounts reads the counters n, indexed by reason.
func destroyCounts(n *[numDestroyReasons]atomic.Uint64) DestroyCounts {
	return DestroyCounts{
		Invalid: n[reasonInvalid].Load(), Idle: n[reasonIdle].Load(), Lifetime: n[reasonLifetime].Load(),
		TestFailed: n[reasonTestFailed].Load(), Discarded: n[reasonDiscarded].Load(), Leaked: n[reasonLeaked].Load(),
		Closed: n[reasonClosed].Load(), Late: n[reasonLate].Load(), Rejected: n[reasonRejected].Load(),
		Evicted: n[reasonEvicted].Load(), Yielded: n[reasonYielded].Load(),
		Reset: n[reasonReset].Load(), Resized: n[reasonResized].Load(),
	}
}

// add adds o's counts to d.
func (d *DestroyCounts) add(o DestroyCounts) {
	d.Invalid += o.Invalid
	d.Idle += o.Idle
	d.Lifetime += o.Lifetime
	d.TestFailed += o.TestFailed
	d.Discarded += o.Discarded
	d.Leaked += o.Leaked
	d.Closed += o.Closed
	d.Late += o.Late
	d.Rejected += o.Rejected
	d.Evicted += o.Evicted
	d.Yielded += o.Yielded
	d.Reset += o.Reset
	d.Resized += o.Resized
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
	maxObjects, minIdle := p.sizeNow()
	s := Stats{
		Closed:              p.closed.Load(),
		MaxObjects:          maxObjects,
		MinIdle:             minIdle,
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
	s.Budget = budgetStats(p.cfg.Budget)
	if f := p.failure.Load(); f != nil {
		s.CreateFailuresInARow = f.failures
		s.NextCreateAttempt = p.timeAt(f.retryAt)
		s.LastCreateError = f.stat
		s.LastCreateErrorAt = p.timeAt(f.at)
	}
	s.Destroys = destroyCounts(&c.destroys)
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
