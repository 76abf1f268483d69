package pool

import (
	"log/slog"
	"runtime"
	"strconv"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/leak"
)

// MaxObjectsLimit is the largest MaxObjects accepted: the pool allocates its
// wait queue (a pointer per object) up front.
const MaxObjectsLimit = 1 << 16

// Defaults used for zero Config fields.
const (
	DefaultMaxQueueSize       = 1024
	DefaultMaxIdle            = 30 * time.Minute
	DefaultCreateTimeout      = 10 * time.Second
	DefaultTestTimeout        = 5 * time.Second
	DefaultValidationInterval = 30 * time.Second

	// DefaultBackoffInitial is the wait after a first creation failure,
	// short enough that a blip (one refused connection) costs callers
	// little.
	DefaultBackoffInitial = 50 * time.Millisecond
	// DefaultBackoffMax caps the wait between creation attempts while they
	// fail: about one attempt a second against a database that is down, and
	// a restarted one is found within a second.
	DefaultBackoffMax = time.Second
	// DefaultFailureLogInterval is the least time between two log lines
	// about failing creations.
	DefaultFailureLogInterval = 10 * time.Second
	// DefaultCoDelTarget and DefaultCoDelInterval are OverloadCoDel's M and
	// N, the values of "Fail at Scale".
	DefaultCoDelTarget   = 5 * time.Millisecond
	DefaultCoDelInterval = 100 * time.Millisecond
)

// DefaultMaxObjects is max(4, runtime.NumCPU()), the default of MaxObjects.
func DefaultMaxObjects() int { return max(4, runtime.NumCPU()) }

// Config configures a Pool. Every zero value means the documented default;
// Validate checks the whole Config in one place.
type Config struct {
	// MaxObjects is the most objects alive at once, counting those being
	// created and tested. Zero means DefaultMaxObjects(). Back-pressure
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
	// shorter than the interval. Zero means DefaultMaxIdle; negative means
	// no limit.
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
	// fails at once with a *QueueFullError (errors.Is ErrQueueFull).
	// Callers waiting for a creation of their own do not count, so no
	// caller is refused while the pool is below its effective size. Zero
	// means DefaultMaxQueueSize.
	MaxQueueSize int
	// MaxConcurrentCreates caps creations in flight. Zero means MaxObjects
	// (no cap beyond MaxObjects).
	MaxConcurrentCreates int
	// AcquireTimeout bounds how long a Take waits for an object, apart from
	// the caller's context (which may also bound the work done with the
	// object): a Take still waiting after it fails with an
	// *AcquireTimeoutError (errors.Is ErrAcquireTimeout). A creation the
	// Take asked for goes on and serves the next caller. Zero means no bound
	// but the context's.
	AcquireTimeout time.Duration
	// CreateTimeout bounds one creation. Create gets it as its context's
	// deadline, and the pool enforces it too: at the timeout the caller
	// waiting for the creation gets a *CreateError, and an object that
	// Create returns later is destroyed (DestroyLate). The creation's slot
	// stays taken until Create returns (and its object is destroyed), so
	// that no more than MaxObjects objects exist, even with a Create that
	// ignores its context. Zero means DefaultCreateTimeout.
	CreateTimeout time.Duration
	// TestTimeout bounds one Test of an idle object, as CreateTimeout bounds
	// a creation: at the timeout the pool gives up on the object, which is
	// destroyed when Test returns, its slot taken until then. Zero means
	// DefaultTestTimeout.
	TestTimeout time.Duration
	// ValidationInterval is the actor's tick: every interval it destroys
	// objects idle past MaxIdle or past their lifetime, Tests objects idle for
	// a whole interval, reports handles held past Leak.HoldThreshold and
	// refills to MinIdle. It is the resolution of MaxIdle and of hold-time
	// reports. Zero means DefaultValidationInterval, or MaxIdle when that is
	// shorter.
	ValidationInterval time.Duration
	// CreateBackoff governs what the pool does when creations fail. On by
	// default: after a failure the pool waits before its next attempt,
	// makes one attempt at a time until one succeeds, and logs one line
	// per interval; callers that cannot wait that long fail at once (see
	// BackoffConfig).
	CreateBackoff BackoffConfig
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
	// Overload chooses what happens when more callers wait than the pool
	// can serve within their deadlines. The default (OverloadDeadline)
	// fails at once the callers that cannot be served in time and keeps
	// FIFO order for the others (see OverloadPolicy).
	Overload OverloadConfig
	// Leak configures leak tracking. The zero value tracks lost handles
	// through the garbage collector, without stacks.
	Leak leak.Config
	// Clock is the source of time. Nil means clock.System().
	Clock clock.Clock
	// Logger receives the pool's events (see EventKind for each one's
	// level, and the Attr constants for the attribute names). Nil means
	// slog.Default().
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

// nonNegInt and nonNegDur refuse a negative value of field, which is zero
// for its default or positive.
func nonNegInt(field string, v int) error {
	if v < 0 {
		return &ConfigError{Field: field, Value: v, Reason: "must be 0 (default) or positive"}
	}
	return nil
}

func nonNegDur(field string, v time.Duration) error {
	if v < 0 {
		return &ConfigError{Field: field, Value: v, Reason: "must be 0 (default) or positive"}
	}
	return nil
}

// maxObjectsInLimit refuses a MaxObjects over MaxObjectsLimit.
func maxObjectsInLimit(n int) error {
	if n > MaxObjectsLimit {
		return &ConfigError{Field: "MaxObjects", Value: n, Reason: "must be at most " + strconv.Itoa(MaxObjectsLimit)}
	}
	return nil
}

// Validate reports the first field whose value is not accepted, as a
// *ConfigError naming it.
func (c Config) Validate() error {
	for _, err := range []error{
		nonNegInt("MaxObjects", c.MaxObjects),
		nonNegInt("MinIdle", c.MinIdle),
		nonNegInt("MaxQueueSize", c.MaxQueueSize),
		nonNegInt("MaxConcurrentCreates", c.MaxConcurrentCreates),
		nonNegDur("MaxLifetime", c.MaxLifetime),
		nonNegDur("MaxLifetimeJitter", c.MaxLifetimeJitter),
		nonNegDur("AcquireTimeout", c.AcquireTimeout),
		nonNegDur("CreateTimeout", c.CreateTimeout),
		nonNegDur("TestTimeout", c.TestTimeout),
		nonNegDur("ValidationInterval", c.ValidationInterval),
		nonNegDur("Leak.HoldThreshold", c.Leak.HoldThreshold),
		nonNegDur("CreateBackoff.Initial", c.CreateBackoff.Initial),
		nonNegDur("CreateBackoff.Max", c.CreateBackoff.Max),
		nonNegDur("CreateBackoff.LogInterval", c.CreateBackoff.LogInterval),
		nonNegDur("Overload.Target", c.Overload.Target),
		nonNegDur("Overload.Interval", c.Overload.Interval),
	} {
		if err != nil {
			return err
		}
	}
	if err := maxObjectsInLimit(c.MaxObjects); err != nil {
		return err
	}
	d := c.withDefaults()
	if d.MaxIdle > 0 && d.MaxIdle < d.ValidationInterval {
		return &ConfigError{Field: "MaxIdle", Value: c.MaxIdle,
			Reason: "must not be shorter than ValidationInterval (" + d.ValidationInterval.String() +
				"): idle time is checked once per interval; shorten ValidationInterval or leave it 0 to follow MaxIdle"}
	}
	if b := d.CreateBackoff; b.Max < b.Initial {
		return &ConfigError{Field: "CreateBackoff.Max", Value: c.CreateBackoff.Max,
			Reason: "must not be shorter than CreateBackoff.Initial (" + b.Initial.String() + ")"}
	}
	if c.Overload.Policy > OverloadCoDel {
		return &ConfigError{Field: "Overload.Policy", Value: c.Overload.Policy,
			Reason: "must be OverloadDeadline (0, default), OverloadFIFO or OverloadCoDel"}
	}
	if o := d.Overload; o.Interval < o.Target {
		return &ConfigError{Field: "Overload.Interval", Value: c.Overload.Interval,
			Reason: "must not be shorter than Overload.Target (" + o.Target.String() + ")"}
	}
	if d.MinIdle > d.MaxObjects {
		return &ConfigError{Field: "MinIdle", Value: c.MinIdle,
			Reason: "must not exceed MaxObjects (" + strconv.Itoa(d.MaxObjects) + ")"}
	}
	return nil
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.MaxObjects == 0 {
		c.MaxObjects = DefaultMaxObjects()
	}
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = DefaultMaxQueueSize
	}
	if c.MaxConcurrentCreates == 0 || c.MaxConcurrentCreates > c.MaxObjects {
		c.MaxConcurrentCreates = c.MaxObjects
	}
	if c.MaxIdle == 0 {
		c.MaxIdle = DefaultMaxIdle
	}
	if c.CreateTimeout == 0 {
		c.CreateTimeout = DefaultCreateTimeout
	}
	if c.TestTimeout == 0 {
		c.TestTimeout = DefaultTestTimeout
	}
	if c.ValidationInterval == 0 {
		c.ValidationInterval = DefaultValidationInterval
		if c.MaxIdle > 0 {
			c.ValidationInterval = min(c.ValidationInterval, c.MaxIdle)
		}
	}
	if c.CreateBackoff.Initial == 0 {
		c.CreateBackoff.Initial = DefaultBackoffInitial
	}
	if c.CreateBackoff.Max == 0 {
		c.CreateBackoff.Max = max(DefaultBackoffMax, c.CreateBackoff.Initial)
	}
	if c.CreateBackoff.LogInterval == 0 {
		c.CreateBackoff.LogInterval = DefaultFailureLogInterval
	}
	if c.Overload.Target == 0 {
		c.Overload.Target = DefaultCoDelTarget
	}
	if c.Overload.Interval == 0 {
		c.Overload.Interval = max(DefaultCoDelInterval, c.Overload.Target)
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

// BackoffConfig governs the pool's creations while they fail. The zero
// value is the default: on.
//
// After a creation fails, the pool makes no attempt for a delay (Initial,
// doubled after each failure in a row up to Max, each drawn at random
// between half of it and all of it, so that pools do not retry in step),
// then one attempt at a time, for the oldest caller waiting, until one
// succeeds; a success ends it. Meanwhile a caller that needs a creation
// waits for the next attempt, unless its deadline (its context's, or
// AcquireTimeout) comes before that attempt while no object is alive to be
// given back: then it fails at once with a *CreateError carrying the last
// failure and the time of the next attempt (RetryAfter). A caller without
// any deadline gets the result of the next attempt. A caller whose wait ends
// by its deadline while creations fail gets a *WaitError naming the last
// failure.
//
// A Create error that carries its own retry time (a method RetryAfter()
// time.Time returning a future time, as a circuit breaker's rejection or a
// pause of package resilience does) fails every caller waiting for a
// creation at once with it, and the pool makes no attempt before that
// time: Takes that would need a creation meanwhile fail at once with it.
type BackoffConfig struct {
	// Initial is the delay after a first failure. Zero means
	// DefaultBackoffInitial (50ms).
	Initial time.Duration
	// Max caps the delay. Zero means DefaultBackoffMax (1s), or Initial if
	// that is longer.
	Max time.Duration
	// LogInterval is the least time between two log lines about a run of
	// failing creations once it is logged at Warn: the first failure that
	// a caller got is that caller's to report and is logged at Debug; a run
	// that persists, or a failure nobody got, is logged at Warn at once;
	// the next failures as one line with their count once the interval has
	// passed; the end of the run as one line at Info. Zero means
	// DefaultFailureLogInterval (10s).
	LogInterval time.Duration
	// Disabled turns the delays off: every failure goes to the caller whose
	// creation it was, and the next caller's creation is tried at once, as
	// many at a time as MaxConcurrentCreates allows. Logging stays bounded.
	Disabled bool
	// IgnoreRetryAfter makes the pool treat a Create error that carries a
	// retry time as any other failure.
	IgnoreRetryAfter bool
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
	// callers waiting for a give-back waits at most Interval, or at most
	// Target when that queue has not been empty for the last Interval, and
	// then fails with an *OverloadError. It ignores deadlines: it keeps
	// waits short for everyone, failing callers that could have been
	// served in time (a pool of 10 objects held 100ms each cannot serve a
	// caller with 10 ahead of it within the default Interval).
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

// OverloadConfig chooses the overload policy. The zero value is
// OverloadDeadline.
type OverloadConfig struct {
	Policy OverloadPolicy
	// Target is OverloadCoDel's longest wait under overload. Zero means
	// DefaultCoDelTarget (5ms).
	Target time.Duration
	// Interval is OverloadCoDel's longest wait otherwise, and how long the
	// queue must stay non-empty for it to call it overload. Zero means
	// DefaultCoDelInterval (100ms).
	Interval time.Duration
}
