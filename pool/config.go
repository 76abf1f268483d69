package pool

import (
	"log/slog"
	"runtime"
	"strconv"
	"time"

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
)

// DefaultMaxObjects is max(4, runtime.NumCPU()), the default of MaxObjects.
func DefaultMaxObjects() int { return max(4, runtime.NumCPU()) }

// Config configures a Pool. Every zero value means the documented default;
// Validate checks the whole Config in one place.
type Config struct {
	// MaxObjects is the most objects alive at once, counting those being
	// created and tested. Zero means DefaultMaxObjects().
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
	// back once the pool is full; the next one fails at once with a
	// *QueueFullError (errors.Is ErrQueueFull). Callers waiting for a
	// creation of their own do not count, so no caller is refused while the
	// pool is below MaxObjects. Zero means DefaultMaxQueueSize.
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
	// waiting for the creation gets a *CreateError, the slot is freed, and
	// an object that Create returns later is destroyed (DestroyLate). Zero
	// means DefaultCreateTimeout.
	CreateTimeout time.Duration
	// TestTimeout bounds one Test of an idle object, as CreateTimeout bounds
	// a creation: at the timeout the slot is freed, and the object is
	// destroyed when Test returns. Zero means DefaultTestTimeout.
	TestTimeout time.Duration
	// ValidationInterval is the actor's tick: every interval it destroys
	// objects idle past MaxIdle or past their lifetime, Tests objects idle for
	// a whole interval, reports handles held past Leak.HoldThreshold and
	// refills to MinIdle. It is the resolution of MaxIdle and of hold-time
	// reports. Zero means DefaultValidationInterval, or MaxIdle when that is
	// shorter.
	ValidationInterval time.Duration
	// Leak configures leak tracking. The zero value tracks lost handles
	// through the garbage collector, without stacks.
	Leak leak.Config
	// Clock is the source of time. Nil means SystemClock.
	Clock Clock
	// Logger receives leak reports and destroy failures. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Name names the pool in log lines. Empty means "pool".
	Name string
}

// Validate reports the first field whose value is not accepted, as a
// *ConfigError naming it.
func (c Config) Validate() error {
	nonNegInt := func(field string, v int) error {
		if v < 0 {
			return &ConfigError{Field: field, Value: v, Reason: "must be 0 (default) or positive"}
		}
		return nil
	}
	nonNegDur := func(field string, v time.Duration) error {
		if v < 0 {
			return &ConfigError{Field: field, Value: v, Reason: "must be 0 (default) or positive"}
		}
		return nil
	}
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
	} {
		if err != nil {
			return err
		}
	}
	if c.MaxObjects > MaxObjectsLimit {
		return &ConfigError{Field: "MaxObjects", Value: c.MaxObjects,
			Reason: "must be at most " + strconv.Itoa(MaxObjectsLimit)}
	}
	d := c.withDefaults()
	if d.MaxIdle > 0 && d.MaxIdle < d.ValidationInterval {
		return &ConfigError{Field: "MaxIdle", Value: c.MaxIdle,
			Reason: "must not be shorter than ValidationInterval (" + d.ValidationInterval.String() +
				"): idle time is checked once per interval; shorten ValidationInterval or leave it 0 to follow MaxIdle"}
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
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Name == "" {
		c.Name = "pool"
	}
	return c
}
