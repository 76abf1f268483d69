package resil

import (
	"time"

	"github.com/respool/respool/resilience"
)

// Reject returns the *resilience.RejectedError of a mechanism's rejection.
func Reject(mechanism, name string, reason error, at, retryAt time.Time) *resilience.RejectedError {
	return &resilience.RejectedError{Mechanism: mechanism, Name: name, Reason: reason, At: at, RetryAt: retryAt}
}

// Emit calls l with e unless l is nil.
func Emit(l resilience.Listener, e resilience.Event) {
	if l != nil {
		l(e)
	}
}
