package dbguard

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/compose"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/ratelimit"
	"github.com/respool/respool/resilience/retry"
)

// Guard is the resilience of one database: the creation path (retry,
// breaker, pause, connect-rate limiter around each connection attempt) and
// the breaker's admission of takes and statements. Make one with New; it is
// safe for concurrent use.
type Guard struct {
	c Config // validated, defaults filled in; read-only

	breaker *breaker.Breaker   // nil when off
	pause   *pause.Pause       // nil when off
	limiter *ratelimit.Limiter // nil when off
	retry   *retry.Retry[struct{}]
	stack   compose.Stack[struct{}] // the creation path: retry, breaker, pause, limiter

	attempts, attemptFailures atomic.Uint64 // connection attempts that reached the factory
	failures                  atomic.Uint64 // statements recorded as failures
	rejected                  atomic.Uint64 // takes and statements refused by the breaker

	// authMu makes the check and the transition of refusedCredentials one
	// step; openedBy is, during that transition, the error that opened the
	// circuit, which the breaker's state-change event then carries.
	authMu   sync.Mutex
	openedBy atomic.Pointer[error]

	// halfOpenTake is set while a take admitted with the circuit half-open
	// (Admit) has not ended: at most one take at a time is let into the
	// pool then.
	halfOpenTake atomic.Bool

	// epoch is the origin of the times below and of the statements'
	// Permit.Since (set by Enter while Config.Breaker.SlowCallDuration is off: the
	// breaker then reads none; negated for a sample, see started).
	epoch time.Time
	// sampledAt is when the last statement sampled for typical started,
	// in nanoseconds since epoch; 0: none yet. typical is the mean run (a
	// moving average) of sampled statements the server answered; 0 until
	// measured. A statement ended by its deadline counts as a failure only
	// when it ran long enough to say something about the server (see
	// statementOutcome).
	sampledAt, typical atomic.Int64

	// tell is the Listener Config.Join returned (nil until it returned, or
	// when it returned none); leave is what Close calls, once.
	tell  atomic.Pointer[resilience.Listener]
	leave func()
	left  sync.Once
}

// New returns a Guard configured by c, or a *resilience.ConfigError naming
// the field that is not accepted (its path in Config: Breaker.WindowSize).
func New(c Config) (*Guard, error) {
	g := &Guard{}
	if c.Join != nil {
		user := c.Listener
		c.Listener = func(e resilience.Event) {
			resil.Emit(user, e)
			if tell := g.tell.Load(); tell != nil {
				(*tell)(e)
			}
		}
	}
	c, err := c.merged()
	if err != nil {
		return nil, err
	}
	g.c, g.epoch = c, c.Clock.Now()
	if !c.BreakerDisabled {
		bc := c.Breaker
		isFailure := bc.IsFailure
		bc.IsFailure = func(err error) bool {
			if _, ok := err.(failed); ok {
				return true // a statement judged by Exit
			}
			// A connection attempt refused for its credentials: a
			// half-open probe refused so opens the circuit again.
			return isFailure(err) || Classify(err).Auth
		}
		listener := bc.Listener
		bc.Listener = func(e resilience.Event) {
			if e.Kind == resilience.EventStateChange && e.To == breaker.Open.String() {
				if by := g.openedBy.Load(); by != nil {
					e.Err = *by
				}
			}
			resil.Emit(listener, e)
		}
		if g.breaker, err = breaker.New(bc); err != nil {
			return nil, within("Breaker", err)
		}
		g.stack.Breaker = g.breaker
	}
	if !c.PauseDisabled {
		if g.pause, err = pause.New(c.Pause); err != nil {
			return nil, within("Pause", err)
		}
		g.stack.Pause = g.pause
	}
	if c.ConnectRate > 0 {
		n := int64(c.ConnectRate)
		if g.limiter, err = ratelimit.New(ratelimit.Config{Name: c.Name,
			Limit:     ratelimit.Limit{Permits: n, Period: time.Second, Burst: n},
			QueueSize: maxQueued, MaxWait: maxLimiterWait, Store: c.ConnectRateStore,
			Clock: c.Clock, Listener: c.Listener}); err != nil {
			return nil, err
		}
		g.stack.Limiter = g.limiter
	}
	rc := c.Retry
	retryOn := rc.RetryOn
	rc.RetryOn = func(err error) bool {
		_, fresh := err.(freshCredentials)
		return !errors.Is(err, resilience.ErrRejected) && (fresh || retryOn(err)) &&
			(g.breaker == nil || g.breaker.State() == breaker.Closed)
	}
	if g.retry, err = retry.New(rc); err != nil {
		return nil, within("Retry", err)
	}
	g.stack.Retry = g.retry
	if c.Join != nil {
		tell, leave := c.Join(g)
		if tell != nil {
			g.tell.Store(&tell)
		}
		g.leave = leave
	}
	return g, nil
}

// The connect-rate limiter's queue: attempts beyond the rate wait, bounded
// by their creation's deadline rather than by these.
const (
	maxQueued      = 1 << 16
	maxLimiterWait = time.Hour
)

// Close stops the pause's reopening timer, if one is set, and leaves the
// Guards it joined (Config.Join). The Guard may still be used; a pause
// then ends at the first creation after its time.
func (g *Guard) Close() {
	if g.pause != nil {
		g.pause.Stop()
	}
	if g.leave != nil {
		g.left.Do(g.leave)
	}
}

// Breaker returns the circuit breaker, or nil when it is off.
func (g *Guard) Breaker() *breaker.Breaker { return g.breaker }

// Pause returns the pause, or nil when it is off.
func (g *Guard) Pause() *pause.Pause { return g.pause }

// check is Admit without its half-open gate: nil, or the breaker's
// rejection, counted in Stats.Rejected.
func (g *Guard) check() error {
	if g.breaker == nil {
		return nil
	}
	if err := g.breaker.Check(); err != nil {
		g.rejected.Add(1)
		return err
	}
	return nil
}

// Admit admits a take from the pool: nil, or, while the circuit is open
// (or half-open with its probe under way), the breaker's rejection, a
// *resilience.RejectedError matching breaker.ErrOpen (or
// breaker.ErrHalfOpenFull) whose RetryAfter is when a probe goes through.
// While the circuit is half-open it admits one take at a time: the others
// are rejected with a *resilience.RejectedError matching
// breaker.ErrHalfOpenFull whose RetryAfter is an open delay later. done
// ends the take's admission (call it once the take has returned; calling it
// again, or calling the done of a rejection, does nothing). An admission
// without that gate would let every caller of a half-open circuit into the
// pool: on a frozen server, whose statements and sessions hold the pool's
// slots, each of them would wait out its deadline for a connection that
// does not come, and none would reach the breaker as its probe. Admit takes
// no breaker permit: the connection attempt or statement that follows
// enters the breaker itself. With the circuit closed it reads one atomic
// word, and done does nothing.
func (g *Guard) Admit() (done func(), err error) {
	if err := g.check(); err != nil {
		return admitted, err
	}
	if g.breaker == nil || g.breaker.State() != breaker.HalfOpen {
		return admitted, nil
	}
	if !g.halfOpenTake.CompareAndSwap(false, true) {
		g.rejected.Add(1)
		now := g.c.Clock.Now()
		return admitted, resil.Reject("breaker", g.c.Name, breaker.ErrHalfOpenFull, now, now.Add(g.c.Breaker.OpenDelay.Initial))
	}
	var once sync.Once
	return func() { once.Do(func() { g.halfOpenTake.Store(false) }) }, nil
}

// admitted is the done of a take admitted with the circuit closed, or
// rejected: there is nothing to end.
func admitted() {}

// Enter admits a statement (any call that goes to the server on a
// connection already made), or rejects it as Admit does. Every admitted
// statement is ended by one Exit with its outcome and its context.
func (g *Guard) Enter(ctx context.Context) (resilience.Permit, error) {
	if g.breaker == nil {
		return resilience.Permit{}, nil
	}
	p, err := g.breaker.Enter(ctx)
	if err != nil {
		g.rejected.Add(1)
	} else if g.c.Breaker.SlowCallDuration == 0 {
		p.Since = g.started()
	}
	return p, err
}

// started notes the start of a statement: the time now, in nanoseconds
// since epoch (at least 1), negated when the statement is a sample of the
// typical run: the first to start a millisecond or more after the last
// sample did. Statements run thousands of times a second: the shared word
// is written at most once a millisecond, and Exit reads the clock for the
// samples only. A sample is chosen by its start, not by its run.
func (g *Guard) started() int64 {
	now := g.nanos()
	last := g.sampledAt.Load()
	if (last == 0 || now-last >= int64(time.Millisecond)) && g.sampledAt.CompareAndSwap(last, now) {
		return -now
	}
	return now
}

// start is when the statement p admitted started (see started); 0 when
// Enter did not note it.
func start(p resilience.Permit) int64 { return max(p.Since, -p.Since) }

// nanos is the time now, in nanoseconds since epoch; at least 1.
func (g *Guard) nanos() int64 { return max(int64(g.c.Clock.Now().Sub(g.epoch)), 1) }

// Exit records the outcome of the statement p admitted; ctx is the one it
// ran with. A connection-level error or a timeout (one that ran long
// enough: see statementOutcome) is a failure; the
// caller's own errors are successes (the server answered); a cancellation
// by the caller's context, driver.ErrBadConn (database/sql runs the
// statement again on another connection, and that outcome counts) and
// driver.ErrSkip are not recorded.
func (g *Guard) Exit(ctx context.Context, p resilience.Permit, err error) {
	if g.breaker == nil {
		return
	}
	if err != nil {
		err = g.statementOutcome(ctx, p, err)
	}
	if err == nil && g.c.Breaker.SlowCallDuration == 0 {
		g.answered(p)
	}
	g.breaker.Exit(p, err)
}

// answered samples the run of the statement p admitted, which the server
// has just answered, into the typical run, when Enter chose it as a sample.
func (g *Guard) answered(p resilience.Permit) {
	if p.Since >= 0 {
		return // not a sample
	}
	run := max(g.nanos()+p.Since, 1)
	if old := g.typical.Load(); old != 0 {
		run = max(old+(run-old)/typicalWeight, 1)
	}
	g.typical.Store(run)
}

// typicalWeight is the weight of the newest sample in the typical run: 1/8.
const typicalWeight = 8

// longRun is how many typical runs a statement ended by its deadline must
// have run for its timeout to count as a failure.
const longRun = 2

// errNotRecorded is the outcome Exit gives the breaker for a statement that
// says nothing of the server: it matches resilience.ErrRejected, which the
// breaker does not record (and a half-open trial permit goes back).
var errNotRecorded = notRecorded{}

type notRecorded struct{}

func (notRecorded) Error() string        { return "dbguard: not recorded" }
func (notRecorded) Is(target error) bool { return target == resilience.ErrRejected }

// failed marks a statement's error that ClassifyContext judged a failure.
type failed struct{ error }

func (f failed) Unwrap() error { return f.error }

// statementOutcome maps the error of the statement p admitted to what the
// breaker records. A statement ended by its deadline, or another timeout,
// is a failure only when it ran at least twice as long as the statements
// the server answered (their moving average; with Config.Breaker.SlowCallDuration
// off, when Enter noted its start): one whose caller's deadline came
// sooner (it waited for its connection, or the server is slow but
// answering) says nothing against the server, and is not recorded. On a
// frozen server the statements under way run until their deadline.
func (g *Guard) statementOutcome(ctx context.Context, p resilience.Permit, err error) error {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, driver.ErrSkip) || errors.Is(err, resilience.ErrRejected) {
		return errNotRecorded
	}
	v := ClassifyContext(ctx, err)
	switch {
	case v.Canceled:
		return context.Canceled
	case v.Timeout && g.shortRun(p):
		return errNotRecorded
	case v.IsFailure():
		g.failures.Add(1)
		return failed{err}
	}
	return nil // the server answered
}

// shortRun reports whether the statement p admitted, ending now, ran less
// than longRun typical runs; false when either is unknown.
func (g *Guard) shortRun(p resilience.Permit) bool {
	typical, since := g.typical.Load(), start(p)
	if g.c.Breaker.SlowCallDuration != 0 || since == 0 || typical == 0 {
		return false
	}
	return g.nanos()-since < longRun*typical
}
