package timeout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// Config configures a Timeout. The zero value of every field is the default
// written beside it.
type Config struct {
	// Name appears in events and errors.
	Name string
	// Timeout is the operation's deadline from its start. Default 10
	// seconds.
	Timeout time.Duration
	// Clock is where the deadline is kept. Nil means clock.System() (the
	// context package's own deadline); another clock cancels the context
	// from a timer of its own.
	Clock clock.Clock
	// Listener receives EventTimeout.
	Listener resilience.Listener
}

// DefaultTimeout is the Timeout of the zero Config.
const DefaultTimeout = 10 * time.Second

const mechanism = "timeout"

// ErrTimeout is matched (errors.Is) by the error of an operation that ran
// past its deadline.
var ErrTimeout = errors.New("timeout")

// Error is the error of an operation that ran past its deadline and
// failed of it. It matches ErrTimeout and, through errors.Is and errors.As,
// what the operation returned (a driver's error type, a server's code),
// except the context's own errors: errors.Is(err, context.DeadlineExceeded)
// and errors.Is(err, context.Canceled) are false, so that the timeout is
// not taken for the caller's deadline or cancellation (an outer retry
// retries it, a breaker counts it).
type Error struct {
	Name    string
	Timeout time.Duration
	Err     error // what the operation returned
}

func (e *Error) Error() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	return fmt.Sprintf("timeout%s: operation ran past %v: %v", name, e.Timeout, e.Err)
}

// Unwrap returns ErrTimeout. The operation's error is reached through Is
// and As instead, which leave the context's errors out.
func (e *Error) Unwrap() error { return ErrTimeout }

// Is reports whether the operation's error matches target, unless target
// is context.DeadlineExceeded or context.Canceled.
func (e *Error) Is(target error) bool {
	return target != context.DeadlineExceeded && target != context.Canceled && errors.Is(e.Err, target)
}

// As finds target in the operation's error.
func (e *Error) As(target any) bool { return errors.As(e.Err, target) }

// Timeout bounds operations. Make one with New.
type Timeout struct {
	c Config
}

// New returns a Timeout configured by c, or a *resilience.ConfigError.
func New(c Config) (*Timeout, error) {
	if err := resil.Check(c.Timeout >= 0, mechanism, "Timeout", c.Timeout, "a duration >= 0 (0: 10s)"); err != nil {
		return nil, err
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	c.Clock = resil.ClockOr(c.Clock)
	return &Timeout{c: c}, nil
}

// Do runs op with ctx bounded by t. When the caller's deadline is sooner,
// op runs with ctx as it is and nothing is allocated.
//
// op's error becomes an *Error when the deadline made op fail: the timeout
// fired, ctx had not ended, and the error is the context's (it matches
// context.DeadlineExceeded or context.Canceled, as a driver's error does
// when its context ends; or the cause, ErrTimeout). Any other error is
// op's own and is returned as it is, even when it came back after the
// deadline: a server's error that was on its way (a deadlock, a unique
// violation) is not a timeout. So is a driver's own report of the deadline
// that does not carry the context's error, such as PostgreSQL's 57014
// query_canceled after pgx's cancel request, which resilience/dbclass
// classifies as a statement timeout.
func Do[T any](ctx context.Context, t *Timeout, op func(context.Context) (T, error)) (T, error) {
	if dl, ok := ctx.Deadline(); ok && resil.IsSystem(t.c.Clock) && time.Until(dl) <= t.c.Timeout {
		return op(ctx)
	}
	tctx, cancel := t.context(ctx)
	v, err := op(tctx)
	cancel()
	if err != nil && errors.Is(context.Cause(tctx), errFired) && ctx.Err() == nil && ofContext(err) {
		err = t.fired(err)
	}
	return v, err
}

// ofContext reports whether err is its context's: the deadline or the
// cancellation by which the timeout ends it, or the timeout's cause.
func ofContext(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout)
}

// errFired is the cause a Timeout cancels its context with.
var errFired = fmt.Errorf("%w: deadline passed", ErrTimeout)

// context returns ctx bounded by the timeout.
func (t *Timeout) context(ctx context.Context) (context.Context, context.CancelFunc) {
	if resil.IsSystem(t.c.Clock) {
		return context.WithTimeoutCause(ctx, t.c.Timeout, errFired)
	}
	tctx, cancel := context.WithCancelCause(ctx)
	timer := t.c.Clock.AfterFunc(t.c.Timeout, func() { cancel(errFired) })
	return tctx, func() {
		timer.Stop()
		cancel(context.Canceled)
	}
}

func (t *Timeout) fired(err error) error {
	e := &Error{Name: t.c.Name, Timeout: t.c.Timeout, Err: err}
	resil.Emit(t.c.Listener, resilience.Event{Time: t.c.Clock.Now(), Mechanism: mechanism, Name: t.c.Name,
		Kind: resilience.EventTimeout, Delay: t.c.Timeout, Err: e})
	return e
}
