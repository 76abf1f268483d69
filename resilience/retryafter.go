package resilience

import (
	"errors"
	"fmt"
	"time"
)

// ErrRejected is matched (errors.Is) by every rejection of every mechanism:
// the operation did not run. A Guard's Exit receives such an error when a
// guard inside it rejected the call, and then records nothing.
var ErrRejected = errors.New("resilience: rejected")

// RetryAfterer is implemented by errors that know the earliest time a retry
// can succeed: a breaker's rejection (its half-open time), a limiter's
// (when the permits are back), a pause's (when the gate reopens), or a
// server's own value wrapped by the caller. The time is on the Clock of the
// mechanism that made the error. Retry waits until it instead of using its
// delay strategy.
type RetryAfterer interface {
	RetryAfter() time.Time
}

// RetryAfter returns the retry-after time carried by err or any error it
// wraps, and whether there was one. A zero time counts as none.
func RetryAfter(err error) (time.Time, bool) {
	var ra RetryAfterer
	if !errors.As(err, &ra) {
		return time.Time{}, false
	}
	t := ra.RetryAfter()
	return t, !t.IsZero()
}

// RejectedError is the rejection every mechanism returns: which mechanism
// (and which instance, by Name) rejected the call, why (a sentinel of that
// mechanism's package, such as breaker.ErrOpen, which errors.Is matches),
// and when a retry can succeed (zero when unknown).
type RejectedError struct {
	Mechanism string
	Name      string
	Reason    error
	At        time.Time // when the call was rejected
	RetryAt   time.Time // zero when unknown
}

// Error says who rejected the call, why, and until when.
func (e *RejectedError) Error() string {
	who := e.Mechanism
	if e.Name != "" {
		who += " " + e.Name
	}
	if e.RetryAt.IsZero() {
		return fmt.Sprintf("%s: %v", who, e.Reason)
	}
	return fmt.Sprintf("%s: %v (retry after %v)", who, e.Reason, e.RetryAt.Sub(e.At))
}

// Unwrap returns the reason and ErrRejected.
func (e *RejectedError) Unwrap() []error { return []error{e.Reason, ErrRejected} }

// RetryAfter returns RetryAt.
func (e *RejectedError) RetryAfter() time.Time { return e.RetryAt }
