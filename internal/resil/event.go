package resil

import (
	"errors"
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

// ErrFreshCredentials marks a connection attempt's authentication failure
// (dbguard.Classification.Auth) whose credentials a hook gave for that
// attempt (respool's Config.PgxBeforeConnect, MySQLBeforeConnect): the
// next attempt asks the hook again and may get new ones, so dbguard makes
// it once more before it opens the circuit.
var ErrFreshCredentials = errors.New("respool: the credentials are asked for again on the next attempt")
