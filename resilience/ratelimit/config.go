package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// Algorithm is how permits are counted.
type Algorithm uint8

// The algorithms.
const (
	TokenBucket Algorithm = iota
	FixedWindow
	SlidingLog
	SlidingWindow
	LeakyBucket
	numAlgorithms
)

var algorithmNames = [numAlgorithms]string{"token_bucket", "fixed_window", "sliding_log", "sliding_window", "leaky_bucket"}

func (a Algorithm) String() string {
	if a < numAlgorithms {
		return algorithmNames[a]
	}
	return "unknown"
}

// Limit is what a limiter allows. It may be changed at run time
// (Limiter.SetLimit) except for its Algorithm.
type Limit struct {
	Algorithm Algorithm
	// Permits is how many permits a Period allows. Default 1000.
	Permits int64
	// Period is the period. Default 1 minute.
	Period time.Duration
	// Burst is TokenBucket's capacity, and how many permits ahead
	// LeakyBucket may schedule a caller. Default Permits. Burst ×
	// Period/Permits may not exceed 2⁶⁰ nanoseconds (about 36 years).
	Burst int64
}

// Defaults of the zero Limit (Kresil's).
const (
	DefaultPermits = 1000
	DefaultPeriod  = time.Minute
	DefaultMaxWait = 10 * time.Second
)

// Config configures a Limiter or a Keyed. The zero value of every field is
// the default written beside it.
type Config struct {
	// Name appears in events and errors.
	Name string
	// Limit is the limit. Default: TokenBucket, 1000 permits a minute,
	// burst 1000. (Kresil's default algorithm is the fixed window, whose
	// edge lets twice the limit through; a database gains nothing from that
	// burst.)
	Limit Limit
	// QueueSize is how many callers may wait for permits, in FIFO order.
	// Default 0: a caller without permits is rejected at once.
	QueueSize int
	// MaxWait is the longest a caller waits in the queue, or for a leaky
	// bucket's slot. Default 10 seconds. The caller's context bounds it too.
	MaxWait time.Duration
	// Cost is the permits a call through Enter takes. Default 1.
	Cost int64
	// DrainOn says whether an operation's error means the quota is gone
	// (a server's "quota exhausted"); Exit then drains the permits until
	// they refill. Default: never.
	DrainOn func(err error) bool
	// Store holds the state. Default: in memory, private to this limiter.
	Store Store
	// Key is the key a Limiter's state has in Store. Default "".
	Key string
	// Clock is where time is read and timers set. Nil means clock.System().
	Clock clock.Clock
	// Listener receives rejections, queueing, drains and limit changes.
	Listener resilience.Listener
}

const mechanism = "ratelimit"

// Reasons of a rejection, matched with errors.Is; the error itself is a
// *resilience.RejectedError.
var (
	ErrLimited   = errors.New("rate limited")
	ErrQueueFull = errors.New("rate limited: the queue is full")
)

// ErrTooMany is returned when a call asks for more permits than the limit
// can ever grant at once.
var ErrTooMany = errors.New("ratelimit: more permits than the limit's burst")

// withDefaults returns l with its defaults filled in.
func (l Limit) withDefaults() Limit {
	l.Permits = cmp.Or(l.Permits, DefaultPermits)
	l.Period = cmp.Or(l.Period, DefaultPeriod)
	l.Burst = cmp.Or(l.Burst, l.Permits)
	return l
}

// validate checks l as Config.Limit.
func (l Limit) validate() error {
	checks := []error{
		resil.Check(l.Algorithm < numAlgorithms, mechanism, "Limit.Algorithm", l.Algorithm, "a ratelimit.Algorithm"),
		resil.Check(l.Permits >= 0, mechanism, "Limit.Permits", l.Permits, "a count >= 0 (0: 1000)"),
		resil.Check(l.Period >= 0, mechanism, "Limit.Period", l.Period, "a duration >= 0 (0: 1m)"),
		resil.Check(l.Burst >= 0, mechanism, "Limit.Burst", l.Burst, "a count >= 0 (0: Permits)"),
	}
	if err := resil.FirstError(checks...); err != nil {
		return err
	}
	d := l.withDefaults()
	if err := resil.Check(int64(d.Period)/d.Permits > 0, mechanism, "Limit.Permits", l.Permits,
		"at most one permit a nanosecond of Period"); err != nil {
		return err
	}
	// A bucket's depth, Burst × Period/Permits, must fit maxTau:
	// Burst ≤ ⌊maxTau × Permits/Period⌋ (at most maxTau: Permits ≤ Period).
	hi, lo := bits.Mul64(maxTau, uint64(d.Permits))
	maxBurst, _ := bits.Div64(hi, lo, uint64(d.Period))
	return resil.Check(!d.Algorithm.isBucket() || uint64(d.Burst) <= maxBurst,
		mechanism, "Limit.Burst", l.Burst, fmt.Sprintf("at most %d (Burst × Period/Permits at most 2⁶⁰ns, about 36 years)",
			maxBurst))
}

// validate checks c and returns it with the defaults filled in.
func (c Config) validate() (Config, error) {
	if err := c.Limit.validate(); err != nil {
		return c, err
	}
	checks := []error{
		resil.Check(c.QueueSize >= 0, mechanism, "QueueSize", c.QueueSize, "a count >= 0 (0: no queue)"),
		resil.Check(c.MaxWait >= 0, mechanism, "MaxWait", c.MaxWait, "a duration >= 0 (0: 10s)"),
		resil.Check(c.Cost >= 0, mechanism, "Cost", c.Cost, "a count >= 0 (0: 1)"),
	}
	if err := resil.FirstError(checks...); err != nil {
		return c, err
	}
	c.Limit = c.Limit.withDefaults()
	c.MaxWait = cmp.Or(c.MaxWait, DefaultMaxWait)
	c.Cost = cmp.Or(c.Cost, 1)
	c.Clock = resil.ClockOr(c.Clock)
	return c, nil
}
