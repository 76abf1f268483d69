package pool

import (
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
)

// maxObjectsLimit is the largest MaxObjects accepted: the pool allocates its
// wait queue (a pointer per object) up front.
const maxObjectsLimit = 1 << 16

// The values of zero Config fields; each field's doc states its own, and
// Pool.Config shows the values in force.
const (
	defaultMaxQueueSize       = 1024
	defaultMaxIdle            = 30 * time.Minute
	defaultCreateTimeout      = 10 * time.Second
	defaultTestTimeout        = 5 * time.Second
	defaultValidationInterval = 30 * time.Second

	// defaultBackoffInitial is the wait after a first creation failure,
	// short enough that a blip (one refused connection) costs callers
	// little.
	defaultBackoffInitial = 50 * time.Millisecond
	// defaultBackoffMax caps the wait between creation attempts while they
	// fail: about one attempt a second against a database that is down, and
	// a restarted one is found within a second.
	defaultBackoffMax = time.Second
	// defaultFailureLogInterval is the least time between two log lines
	// about failing creations.
	defaultFailureLogInterval = 10 * time.Second
	// defaultCoDelTarget and defaultCoDelInterval are OverloadCoDel's M and
	// N, the values of "Fail at Scale".
	defaultCoDelTarget   = 5 * time.Millisecond
	defaultCoDelInterval = 100 * time.Millisecond
)

// defaultMaxObjects is max(4, runtime.NumCPU()), the value of a zero
// MaxObjects.
func defaultMaxObjects() int { return max(4, runtime.NumCPU()) }

// Config configures a Pool. Every zero value means the default its field
// states; New checks the whole Config in one place, and Pool.Config shows
// the values in force.
type Config struct {
	// MaxObjects is the most objects alive at once, counting those being
	// created and tested, at most 65536. Zero means max(4,
	// runtime.NumCPU()). Back-pressure
	// (see BackPressure) may hold the pool below it for a while: its
	// effective size, Stats.EffectiveMaxObjects.
	MaxObjects int
	// MinIdle is how many idle objects the pool keeps ready: each tick
	// refills to it, and idle-time destruction never goes below it. Zero
	// means none. At most MaxObjects.
	MinIdle int
	// MaxIdle is how long an object may stay idle before it is destroyed.
	// It is checked once per ValidationInterval against the pool's coarse
	// clock (read at each tick, so that GiveBack reads no clock): an object
	// is destroyed after an idle time between MaxIdle-ValidationInterval and
	// MaxIdle+ValidationInterval, never much after MaxIdle. It must not be
	// shorter than the interval. Zero means 30m; negative means no limit.
	MaxIdle time.Duration
	// MaxLifetime is how long an object may live. It is exact where it
	// matters: Take reads the clock and never hands out an expired object
	// (it destroys it and looks again). An expired object is also destroyed
	// when it is given back or found idle by a tick, within ValidationInterval
	// of its expiry. The clock read costs about 25 ns per Take from idle, only
	// with a lifetime set. Zero means no limit, as does any lifetime too long
	// to reach (math.MaxInt64 saturates).
	MaxLifetime time.Duration
	// MaxLifetimeJitter adds a random duration in [0, MaxLifetimeJitter) to
	// each object's lifetime, so that objects created together do not expire
	// together (checked at Take as MaxLifetime is, so even a jitter shorter
	// than ValidationInterval spreads them). Zero means none.
	MaxLifetimeJitter time.Duration
	// MaxQueueSize is how many callers may wait for an object to be given
	// back once the pool is full (at its effective size); the next one
	// fails at once with an error matching ErrQueueFull. Callers waiting
	// for a creation of their own do not count, so no caller is refused
	// while the pool is below its effective size. Zero means 1024.
	MaxQueueSize int
	// MaxConcurrentCreates caps creations in flight. Zero means MaxObjects
	// (no cap beyond MaxObjects). Below the cap, creations are paced while
	// objects are alive (see the package doc): one at a time, one more at
	// once for each that ends with its caller still waiting.
	MaxConcurrentCreates int
	// AcquireTimeout bounds how long a Take waits for an object, apart from
	// the caller's context (which may also bound the work done with the
	// object): a Take still waiting after it fails with an error matching
	// ErrAcquireTimeout. A creation the Take asked for goes on and serves
	// the next caller. Zero means no bound but the context's.
	AcquireTimeout time.Duration
	// CreateTimeout bounds one creation. Create gets it as its context's
	// deadline, and the pool enforces it too: at the timeout the caller
	// waiting for the creation gets a *CreateError, and an object that
	// Create returns later is destroyed (DestroyCounts.Late). The creation's
	// slot stays taken until Create returns (and its object is destroyed),
	// so that no more than MaxObjects objects exist, even with a Create that
	// ignores its context. Zero means 10s.
	CreateTimeout time.Duration
	// TestTimeout bounds one Test of an idle object, as CreateTimeout bounds
	// a creation: at the timeout the pool gives up on the object, which is
	// destroyed when Test returns, its slot taken until then. It bounds the
	// BeforeHandOut and AfterGiveBack hooks alike. Zero means 5s.
	TestTimeout time.Duration
	// ValidationInterval is the actor's tick: every interval it destroys
	// objects idle past MaxIdle or past their lifetime, Tests objects idle for
	// a whole interval, reports handles held past HoldThreshold and
	// refills to MinIdle. It is the resolution of MaxIdle and of hold-time
	// reports. Zero means 30s, or MaxIdle when that is shorter.
	ValidationInterval time.Duration

	// Creations while they fail. On by default: after a creation fails, the
	// pool makes no attempt for a delay (BackoffInitial, doubled after each
	// failure in a row up to BackoffMax, each drawn at random between half
	// of it and all of it, so that pools do not retry in step), then one
	// attempt at a time, for the oldest caller waiting, until one succeeds;
	// a success ends it. Meanwhile a caller that needs a creation waits for
	// the next attempt, unless its deadline (its context's, or
	// AcquireTimeout) comes before that attempt while no object is alive to
	// be given back: then it fails at once with a *CreateError carrying the
	// last failure and the time of the next attempt (RetryAfter). A caller
	// without any deadline gets the result of the next attempt. A caller
	// whose wait ends by its deadline while creations fail gets a
	// *WaitError naming the last failure.
	//
	// A Create error that carries its own retry time (a method RetryAfter()
	// time.Time returning a future time, as a circuit breaker's rejection or
	// a pause of package resilience does) fails every caller waiting for a
	// creation at once with it, and the pool makes no attempt before that
	// time: Takes that would need a creation meanwhile fail at once with it.

	// BackoffInitial is the delay after a first failure. Zero means 50ms.
	BackoffInitial time.Duration
	// BackoffMax caps the delay. Zero means 1s, or BackoffInitial if that
	// is longer.
	BackoffMax time.Duration
	// BackoffDisabled turns the delays off: every failure goes to the
	// caller whose creation it was, and the next caller's creation is tried
	// at once, as many at a time as MaxConcurrentCreates allows. Logging
	// stays bounded.
	BackoffDisabled bool
	// IgnoreRetryAfter makes the pool treat a Create error that carries a
	// retry time as any other failure.
	IgnoreRetryAfter bool
	// FailureLogInterval is the least time between two log lines about a
	// run of failing creations once it is logged at Warn: the first
	// failure that a caller got is that caller's to report and is logged
	// at Debug; a run that persists, or a failure nobody got, is logged at
	// Warn at once; the next failures as one line with their count once
	// the interval has passed; the end of the run as one line at Info.
	// Zero means 10s.
	FailureLogInterval time.Duration

	// BackPressure, when set, recognises the creation errors by which the
	// server says it is full (PostgreSQL 53300 too_many_connections, MySQL
	// 1040): it returns how long to hold off and true. The pool then
	// shrinks its effective size (Stats.EffectiveMaxObjects) to the
	// objects alive, which the server accepted, makes no creation for d,
	// and then grows back one creation at a time, by one object for each
	// that succeeds, until MaxObjects; callers beyond the effective size
	// wait for give-backs in FIFO order, counted against MaxQueueSize. A
	// new back-pressure error shrinks it again. Its signature is that of
	// dbguard.BackPressure. Nil (the default) means no error is
	// back-pressure: the pool does not know the server's errors.
	BackPressure func(err error) (d time.Duration, ok bool)

	// Budget, when set, is a budget of objects shared with pools beyond
	// this one (other processes' pools of the same database): each
	// creation takes a slot from it first, and gives it back when its
	// object is destroyed; a take of an idle object does not ask it. While
	// no slot is free anywhere nothing is created: the pool holds at the
	// objects alive, as under BackPressure, its callers wait for
	// give-backs, and it asks again every 100ms. Nil (the default): the
	// pool's own MaxObjects is its only bound. See Budget.
	Budget Budget
	// Overload chooses what happens when more callers wait than the pool
	// can serve within their deadlines. The zero value, OverloadDeadline,
	// fails at once the callers that cannot be served in time and keeps
	// FIFO order for the others (see OverloadPolicy).
	Overload OverloadPolicy
	// CoDelTarget is OverloadCoDel's longest wait under overload. Zero
	// means 5ms.
	CoDelTarget time.Duration
	// CoDelInterval is OverloadCoDel's longest wait otherwise, and how long
	// the queue must stay non-empty for it to call it overload. Zero means
	// 100ms, or CoDelTarget if that is longer.
	CoDelInterval time.Duration

	// Leak tracking: how the pool finds objects that were taken and never
	// given back. Two detectors work together. The garbage collector finds
	// a lost Handle: every Take hands out a Handle that keeps a token
	// reachable for as long as the caller holds it; once no copy of that
	// Handle is reachable, the pool logs LEAK-DETECTED (EventLeak) with
	// where the object was taken, destroys the object and frees its slot. A
	// hold-time threshold finds a Handle that is still reachable but held
	// too long (a *sql.Tx or *sql.Conn never ended, which database/sql keeps
	// reachable); it is reported once per take as HELD-TOO-LONG
	// (EventHeldTooLong). The zero values track lost Handles through the
	// garbage collector, without stacks and without a threshold.

	// LeakTrackingDisabled turns garbage-collector tracking off: a take then
	// allocates nothing and a lost Handle is never found. HoldThreshold
	// still works when set.
	LeakTrackingDisabled bool
	// LeakCaptureStack records the taker's stack on every take, so that
	// reports name the code that took the object. It costs a stack walk per
	// take; without it, reports name the pool but not who took the object.
	LeakCaptureStack bool
	// HoldThreshold, when positive, reports a Handle held longer than it,
	// once per take. Hold time is measured from the real time of the take (a
	// clock read per take, about 25 ns, only with a threshold set) and looked
	// at on each of the pool's ticks, so a hold is reported at most one
	// ValidationInterval after it passes the threshold, with its true length.
	// Zero turns the report off.
	HoldThreshold time.Duration

	// Clock is the source of time. Nil means clock.System().
	Clock clock.Clock
	// Logger receives the pool's events (see EventKind for each one's
	// level and the attribute names). Nil means slog.Default().
	Logger *slog.Logger
	// OnEvent, when set, receives every event (each creation failure, not
	// only those logged), on the goroutine where it happened (the actor's,
	// a destroyer's, the garbage collector's cleanup goroutine): it must be
	// quick and must not block; it may read Stats but must not Take or
	// Close. Nil means none: events are only logged.
	OnEvent func(Event)
	// Name names the pool in log lines. Empty means "pool".
	Name string
}

// nonNeg checks that field's value v, zero for its default, is not
// negative.
func nonNeg[N int | time.Duration](field string, v N) error {
	return resil.Check(v >= 0, mechanism, field, v, "0 (the default) or more")
}

// mechanism names the pool in its *resilience.ConfigError.
const mechanism = "pool"

// validate reports the first field of c whose value is not accepted, as a
// *resilience.ConfigError naming it.
func (c Config) validate() error {
	if err := resil.FirstError(
		nonNeg("MaxObjects", c.MaxObjects),
		nonNeg("MinIdle", c.MinIdle),
		nonNeg("MaxQueueSize", c.MaxQueueSize),
		nonNeg("MaxConcurrentCreates", c.MaxConcurrentCreates),
		nonNeg("MaxLifetime", c.MaxLifetime),
		nonNeg("MaxLifetimeJitter", c.MaxLifetimeJitter),
		nonNeg("AcquireTimeout", c.AcquireTimeout),
		nonNeg("CreateTimeout", c.CreateTimeout),
		nonNeg("TestTimeout", c.TestTimeout),
		nonNeg("ValidationInterval", c.ValidationInterval),
		nonNeg("HoldThreshold", c.HoldThreshold),
		nonNeg("BackoffInitial", c.BackoffInitial),
		nonNeg("BackoffMax", c.BackoffMax),
		nonNeg("FailureLogInterval", c.FailureLogInterval),
		nonNeg("CoDelTarget", c.CoDelTarget),
		nonNeg("CoDelInterval", c.CoDelInterval),
		checkMaxObjects(c.MaxObjects),
		resil.Check(c.Overload <= OverloadCoDel, mechanism, "Overload", c.Overload,
			"OverloadDeadline (0, the default), OverloadFIFO or OverloadCoDel"),
	); err != nil {
		return err
	}
	d := c.withDefaults()
	return resil.FirstError(
		resil.Check(d.MaxIdle <= 0 || d.MaxIdle >= d.ValidationInterval, mechanism, "MaxIdle", c.MaxIdle,
			"a duration not shorter than ValidationInterval ("+d.ValidationInterval.String()+
				"): idle time is checked once per interval; shorten ValidationInterval or leave it 0 to follow MaxIdle"),
		resil.Check(d.BackoffMax >= d.BackoffInitial, mechanism, "BackoffMax", c.BackoffMax,
			"a duration not shorter than BackoffInitial ("+d.BackoffInitial.String()+")"),
		resil.Check(d.CoDelInterval >= d.CoDelTarget, mechanism, "CoDelInterval", c.CoDelInterval,
			"a duration not shorter than CoDelTarget ("+d.CoDelTarget.String()+")"),
		resil.Check(d.MinIdle <= d.MaxObjects, mechanism, "MinIdle", c.MinIdle,
			"at most MaxObjects ("+strconv.Itoa(d.MaxObjects)+")"),
	)
}

// checkMaxObjects refuses a MaxObjects over maxObjectsLimit.
func checkMaxObjects(n int) error {
	return resil.Check(n <= maxObjectsLimit, mechanism, "MaxObjects", n, "at most "+strconv.Itoa(maxObjectsLimit))
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.MaxObjects == 0 {
		c.MaxObjects = defaultMaxObjects()
	}
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = defaultMaxQueueSize
	}
	if c.MaxConcurrentCreates == 0 || c.MaxConcurrentCreates > c.MaxObjects {
		c.MaxConcurrentCreates = c.MaxObjects
	}
	if c.MaxIdle == 0 {
		c.MaxIdle = defaultMaxIdle
	}
	if c.CreateTimeout == 0 {
		c.CreateTimeout = defaultCreateTimeout
	}
	if c.TestTimeout == 0 {
		c.TestTimeout = defaultTestTimeout
	}
	if c.ValidationInterval == 0 {
		c.ValidationInterval = defaultValidationInterval
		if c.MaxIdle > 0 {
			c.ValidationInterval = min(c.ValidationInterval, c.MaxIdle)
		}
	}
	if c.BackoffInitial == 0 {
		c.BackoffInitial = defaultBackoffInitial
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = max(defaultBackoffMax, c.BackoffInitial)
	}
	if c.FailureLogInterval == 0 {
		c.FailureLogInterval = defaultFailureLogInterval
	}
	if c.CoDelTarget == 0 {
		c.CoDelTarget = defaultCoDelTarget
	}
	if c.CoDelInterval == 0 {
		c.CoDelInterval = max(defaultCoDelInterval, c.CoDelTarget)
	}
	if c.Clock == nil {
		c.Clock = clock.System()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Name == "" {
		c.Name = "pool"
	}
	return c
}

// OverloadPolicy is the pool's queue discipline when callers wait for
// objects to be given back.
type OverloadPolicy uint8

const (
	// OverloadDeadline (the default) keeps FIFO order and fails fast the
	// callers that cannot be served in time. The pool measures how long
	// objects are held while callers wait (a clock read by the waiting
	// callers only, never on the fast path); it judges nobody before it
	// has measured 8 holds, and averages those evenly (the first holds of
	// a pool, those of its start, are often many times the steady ones).
	// Once at least as many callers
	// wait for a give-back as there are objects in use, a caller about to
	// join them, with k ahead of it and n objects in use held for h on
	// average, expects to be served after (k+1)·h/n and then to need its
	// object for h and a margin of h/8: if its context's deadline comes
	// before both, or AcquireTimeout before the first, it fails at once
	// with an *OverloadError (errors.Is ErrOverloaded). And a caller
	// admitted so that, when its turn comes, has less than h+h/8 left
	// before its context's deadline leaves the object to the next in line
	// and fails alike.
	// Callers without a deadline are never refused, and when fewer callers
	// wait than objects are in use nothing changes: plain FIFO. It assumes
	// that a Take's context bounds the work done with the object too, as
	// database/sql's does.
	OverloadDeadline OverloadPolicy = iota
	// OverloadFIFO turns overload handling off: callers are served in
	// FIFO order and each waits until its own deadline.
	OverloadFIFO
	// OverloadCoDel is the controlled-delay queue of Facebook's "Fail at
	// Scale", in FIFO order (without its adaptive LIFO: the pool hands
	// objects over through one FIFO channel): a caller joining the queue of
	// callers waiting for a give-back waits at most Config.CoDelInterval,
	// or at most Config.CoDelTarget when that queue has not been empty for
	// the last CoDelInterval, and then fails with an *OverloadError. It
	// ignores deadlines: it keeps waits short for everyone, failing callers
	// that could have been served in time (a pool of 10 objects held 100ms
	// each cannot serve a caller with 10 ahead of it within the default
	// CoDelInterval).
	OverloadCoDel
)

func (o OverloadPolicy) String() string {
	switch o {
	case OverloadDeadline:
		return "deadline"
	case OverloadFIFO:
		return "fifo"
	case OverloadCoDel:
		return "codel"
	}
	return "OverloadPolicy(" + strconv.Itoa(int(o)) + ")"
}
