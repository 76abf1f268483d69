package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/respool/respool/resilience"
)

var (
	// ErrClosed is returned by Take and TryTake once Close has been called,
	// and to callers still waiting when it is.
	ErrClosed = errors.New("pool: closed")
	// ErrQueueFull is matched (errors.Is) by the error a Take returns when
	// the pool is full and MaxQueueSize callers already wait for an object
	// to be given back; its text gives the counts.
	ErrQueueFull = errors.New("pool: wait queue full")
	// ErrAcquireTimeout is matched (errors.Is) by the error a Take returns
	// when Config.AcquireTimeout ended its wait; its text names the bound,
	// and its Timeout method reports true, as net.Error does.
	ErrAcquireTimeout = errors.New("pool: acquire timeout")
	// ErrOverloaded is matched (errors.Is) by the *OverloadError a Take
	// returns when the overload policy fails it fast.
	ErrOverloaded = errors.New("pool: overloaded")
	// ErrNoIdleObject is returned by TryTake when no idle object is ready.
	ErrNoIdleObject = errors.New("pool: no idle object")
	// ErrAlreadyReturned is returned when a Handle is given back (or
	// discarded) a second time, or after its object was reclaimed as leaked,
	// and for the zero Handle.
	ErrAlreadyReturned = errors.New("pool: handle already given back")
)

// queueFullError says a Take was refused at once because the wait queue was
// full. errors.Is(err, ErrQueueFull) is true for it.
type queueFullError struct {
	Waiting      int // callers waiting for a give-back when the Take was refused
	MaxQueueSize int
	MaxObjects   int
}

func (e *queueFullError) Error() string {
	return fmt.Sprintf("pool: wait queue full: %s already waiting (MaxQueueSize %d, MaxObjects %d)",
		count(e.Waiting, "caller"), e.MaxQueueSize, e.MaxObjects)
}

// count writes n and noun, in the plural unless n is 1: "1 caller",
// "2 callers".
func count[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Is makes errors.Is(err, ErrQueueFull) true.
func (e *queueFullError) Is(target error) bool { return target == ErrQueueFull }

// acquireTimeoutError says a Take waited Config.AcquireTimeout without
// getting an object. errors.Is(err, ErrAcquireTimeout) is true for it; it is
// not the caller's context's error, which a Take returns as it is.
type acquireTimeoutError struct {
	Bound      time.Duration // Config.AcquireTimeout
	MaxObjects int
	Waiting    int // callers waiting when it gave up, itself included
}

func (e *acquireTimeoutError) Error() string {
	return fmt.Sprintf("pool: no object within AcquireTimeout %v (MaxObjects %d, %s waiting)",
		e.Bound, e.MaxObjects, count(e.Waiting, "caller"))
}

// Is makes errors.Is(err, ErrAcquireTimeout) true.
func (e *acquireTimeoutError) Is(target error) bool { return target == ErrAcquireTimeout }

// Timeout reports true, as net.Error does for a timeout.
func (e *acquireTimeoutError) Timeout() bool { return true }

// CreateError says a Take failed because creating an object failed. Err is
// the factory's error: that of the creation made for this Take, or, when the
// Take failed without an attempt of its own (FailedFast), the last one.
// Unwrap returns Err, so errors.As(err, &driverErr) keeps working.
type CreateError struct {
	Err error
	// Failures is the number of creations failed in a row, this one
	// included.
	Failures int
	// RetryAt is when the pool makes its next attempt (on Config.Clock),
	// or zero when it does not hold creations back.
	RetryAt time.Time
	// FailedFast is true when the Take failed without a creation of its
	// own: its deadline came before the next attempt, or a retry time the
	// last error carried was in force.
	FailedFast bool
}

func (e *CreateError) Error() string {
	var b strings.Builder
	b.WriteString("pool: create: ")
	b.WriteString(e.Err.Error())
	if e.FailedFast {
		fmt.Fprintf(&b, " (failed fast: %s in a row, no attempt before %s)", count(e.Failures, "failure"), clockString(e.RetryAt))
	} else if e.Failures > 1 {
		fmt.Fprintf(&b, " (%s in a row)", count(e.Failures, "failure"))
	}
	return b.String()
}

func (e *CreateError) Unwrap() error { return e.Err }

// RetryAfter returns RetryAt, or the retry time Err carries when RetryAt is
// zero: the protocol of package resilience (see resilience.RetryAfter).
func (e *CreateError) RetryAfter() time.Time {
	if !e.RetryAt.IsZero() {
		return e.RetryAt
	}
	t, _ := resilience.RetryAfter(e.Err)
	return t
}

// WaitError is the error of a Take whose wait ended, by its context or by
// AcquireTimeout, while the pool's creations were failing: Err is what ended
// the wait (ctx.Err() or an error matching ErrAcquireTimeout), LastCreateErr
// the factory's last error. errors.Is and errors.As see both (but not a
// *CreateError: this Take did not fail because of one).
type WaitError struct {
	Err           error
	LastCreateErr error
	Failures      int       // creations failed in a row
	RetryAt       time.Time // the pool's next attempt; zero when not held back
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("%v (while creations fail: %s in a row, last: %v)", e.Err, count(e.Failures, "failure"), e.LastCreateErr)
}

func (e *WaitError) Unwrap() []error { return []error{e.Err, e.LastCreateErr} }

// RetryAfter returns RetryAt: the protocol of package resilience.
func (e *WaitError) RetryAfter() time.Time { return e.RetryAt }

// Timeout reports true, as net.Error does for a timeout, when Err is a
// deadline.
func (e *WaitError) Timeout() bool {
	return errors.Is(e.Err, context.DeadlineExceeded) || errors.Is(e.Err, ErrAcquireTimeout)
}

// OverloadError says the overload policy failed a Take fast: under the
// deadline policy, the caller could not have been served and done its
// work before its deadline; under CoDel, it waited as long as CoDel allows
// (Target under overload, Interval otherwise). errors.Is(err, ErrOverloaded) is true for
// it.
type OverloadError struct {
	Policy OverloadPolicy
	// Ahead is the number of callers that waited before this one, and
	// InUse the objects in use, when it was judged.
	Ahead, InUse int
	// Wait is the wait the deadline policy expected (for CoDel, the wait
	// it allowed), Hold the mean hold time it measured, and Left the
	// time the caller had left before its deadline (zero for CoDel).
	Wait, Hold, Left time.Duration
	// AtTurn is true when the caller had been admitted and was failed when
	// its turn came, with less than Hold left: the object went to the
	// next caller.
	AtTurn bool
}

func (e *OverloadError) Error() string {
	switch {
	case e.Policy == OverloadCoDel:
		return fmt.Sprintf("pool: overloaded: waited %v, CoDel's bound (%s ahead)", e.Wait, count(e.Ahead, "caller"))
	case e.AtTurn:
		return fmt.Sprintf("pool: overloaded: served with %v left before the deadline, less than the mean hold of %v; the object went to the next caller",
			e.Left, e.Hold)
	}
	return fmt.Sprintf("pool: overloaded: %s ahead for %s in use, expected wait %v and hold %v exceed the %v left before the deadline",
		count(e.Ahead, "caller"), count(e.InUse, "object"), e.Wait, e.Hold, e.Left)
}

// Is makes errors.Is(err, ErrOverloaded) true.
func (e *OverloadError) Is(target error) bool { return target == ErrOverloaded }

// Timeout reports true: the caller would have missed its deadline.
func (e *OverloadError) Timeout() bool { return true }

// clockString formats a time of the pool's clock for an error message.
func clockString(t time.Time) string {
	if t.IsZero() {
		return "the next Take"
	}
	return t.Format("15:04:05.000")
}
