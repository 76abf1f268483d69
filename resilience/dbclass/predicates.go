package dbclass

import (
	"errors"
	"time"
)

// BackPressure reports whether err is the server asking for less load, and
// for how long everyone should hold off. It is the classifier of a
// pool-wide pause.
func BackPressure(err error) (d time.Duration, ok bool) {
	return defaultClassifier.BackPressure(err)
}

// BackPressure is the package-level BackPressure under c's Config.
func (c *Classifier) BackPressure(err error) (d time.Duration, ok bool) {
	v := c.Classify(err)
	return v.Pause, v.Class == ClassBackPressure
}

// IsFailure reports whether err counts as a failure for a circuit breaker
// (see Classification.IsFailure).
func IsFailure(err error) bool { return Classify(err).IsFailure() }

// IsConnectRetryable reports whether a failed connection attempt, or a
// statement outside a transaction, may be tried again because nothing
// reached the server (see Classification.IsConnectRetryable).
func IsConnectRetryable(err error) bool { return Classify(err).IsConnectRetryable() }

// IsTxRetryable reports whether the whole transaction may be run again
// (see Classification.IsTxRetryable).
func IsTxRetryable(err error) bool { return Classify(err).IsTxRetryable() }

// ErrAmbiguous marks an error whose statement may or may not have taken
// effect at the server.
var ErrAmbiguous = errors.New("dbclass: outcome unknown: the statement may or may not have taken effect")

// MarkAmbiguous returns err so that errors.Is(result, ErrAmbiguous) holds
// when err is in ClassAmbiguous, keeping err in the chain; any other error
// is returned unchanged. Use it to report an unknown outcome to a caller.
func MarkAmbiguous(err error) error {
	if Classify(err).Class != ClassAmbiguous || errors.Is(err, ErrAmbiguous) {
		return err
	}
	return &ambiguousError{err: err}
}

type ambiguousError struct{ err error }

func (e *ambiguousError) Error() string   { return ErrAmbiguous.Error() + ": " + e.err.Error() }
func (e *ambiguousError) Unwrap() []error { return []error{ErrAmbiguous, e.err} }
