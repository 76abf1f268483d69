package pool

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrClosed is returned by Take and TryTake once Close has been called,
	// and to callers still waiting when it is.
	ErrClosed = errors.New("pool: closed")
	// ErrQueueFull is matched (errors.Is) by the *QueueFullError a Take
	// returns when the pool is full and MaxQueueSize callers already wait
	// for an object to be given back.
	ErrQueueFull = errors.New("pool: wait queue full")
	// ErrAcquireTimeout is matched (errors.Is) by the *AcquireTimeoutError a
	// Take returns when Config.AcquireTimeout ended its wait.
	ErrAcquireTimeout = errors.New("pool: acquire timeout")
	// ErrNoIdleObject is returned by TryTake when no idle object is ready.
	ErrNoIdleObject = errors.New("pool: no idle object")
	// ErrAlreadyReturned is returned when a Handle is given back (or
	// discarded) a second time, or after its object was reclaimed as leaked.
	ErrAlreadyReturned = errors.New("pool: handle already given back")
	// ErrForeignHandle is returned for a Handle this pool did not hand out.
	ErrForeignHandle = errors.New("pool: handle not from this pool")
)

// QueueFullError says a Take was refused at once because the wait queue was
// full. errors.Is(err, ErrQueueFull) is true for it.
type QueueFullError struct {
	Waiting      int // callers waiting for a give-back when the Take was refused
	MaxQueueSize int
	MaxObjects   int
}

func (e *QueueFullError) Error() string {
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
func (e *QueueFullError) Is(target error) bool { return target == ErrQueueFull }

// AcquireTimeoutError says a Take waited Config.AcquireTimeout without
// getting an object. errors.Is(err, ErrAcquireTimeout) is true for it; it is
// not the caller's context's error, which a Take returns as it is.
type AcquireTimeoutError struct {
	Bound      time.Duration // Config.AcquireTimeout
	MaxObjects int
	Waiting    int // callers waiting when it gave up, itself included
}

func (e *AcquireTimeoutError) Error() string {
	return fmt.Sprintf("pool: no object within AcquireTimeout %v (MaxObjects %d, %s waiting)",
		e.Bound, e.MaxObjects, count(e.Waiting, "caller"))
}

// Is makes errors.Is(err, ErrAcquireTimeout) true.
func (e *AcquireTimeoutError) Is(target error) bool { return target == ErrAcquireTimeout }

// Timeout reports true, as net.Error does for a timeout.
func (e *AcquireTimeoutError) Timeout() bool { return true }

// CreateError wraps a factory's Create failure returned to the caller whose
// Take asked for the object. Unwrap returns the factory's error, so
// errors.As(err, &driverErr) keeps working.
type CreateError struct{ Err error }

func (e *CreateError) Error() string { return "pool: create: " + e.Err.Error() }
func (e *CreateError) Unwrap() error { return e.Err }

// ConfigError names a Config field whose value is not accepted.
type ConfigError struct {
	Field  string
	Value  any
	Reason string // what is accepted
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("pool: invalid Config.%s = %v: %s", e.Field, e.Value, e.Reason)
}
