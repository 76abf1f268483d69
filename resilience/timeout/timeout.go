package timeout

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	// Clock is where the deadline is kept. Default resilience.System (the
	// context package's own deadline); another clock cancels the context
	// from a timer of its own.
	Clock resilience.Clock
	// Listener receives EventTimeout.
	Listener resilience.Listener
}

// DefaultTimeout is the Timeout of the zero Config.
const DefaultTimeout = 10 * time.Second

const mechanism = "timeout"

// ErrTimeout is matched (errors.Is) by the error of an operation that ran
// past its deadline.
var ErrTimeout = errors.New("timeout")

// Error is the error of an operation that ran past its deadline.
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

// Unwrap returns ErrTimeout alone: the operation's own error (often a
// context.DeadlineExceeded) is in Err, so that the caller's context errors
// are not confused with it.
func (e *Error) Unwrap() error { return ErrTimeout }

// Timeout bounds operations. Make one with New.
type Timeout struct {
	c Config
}

// New returns a Timeout configured by c, or a *resilience.ConfigError.
func New(c Config) (*Timeout, error) {
	if err := resilience.Check(c.Timeout >= 0, mechanism, "Timeout", c.Timeout, "a duration >= 0 (0: 10s)"); err != nil {
		return nil, err
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	c.Clock = resilience.ClockOr(c.Clock)
	return &Timeout{c: c}, nil
}

// Do runs op with ctx bounded by t. When the caller's deadline is sooner,
// op runs with ctx as it is and nothing is allocated.
func Do[T any](ctx context.Context, t *Timeout, op func(context.Context) (T, error)) (T, error) {
	if dl, ok := ctx.Deadline(); ok && resilience.IsSystem(t.c.Clock) && time.Until(dl) <= t.c.Timeout {
		return op(ctx)
	}
	tctx, cancel := t.context(ctx)
	v, err := op(tctx)
	cancel()
	if err != nil && errors.Is(context.Cause(tctx), errFired) && ctx.Err() == nil {
		err = t.fired(err)
	}
	return v, err
}

// errFired is the cause a Timeout cancels its context with.
var errFired = fmt.Errorf("%w: deadline passed", ErrTimeout)

// context returns ctx bounded by the timeout.
func (t *Timeout) context(ctx context.Context) (context.Context, context.CancelFunc) {
	if resilience.IsSystem(t.c.Clock) {
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
	t.c.Listener.Emit(resilience.Event{Time: t.c.Clock.Now(), Mechanism: mechanism, Name: t.c.Name,
		Kind: resilience.EventTimeout, Delay: t.c.Timeout, Err: e})
	return e
}
