package dbguard

import (
	"errors"
	"time"
)

// BackPressure reports whether err is the server asking for less load, and
// for how long everyone should hold off (Classification.Pause: 1s for a
// full server, 100ms for one starting). It is the classifier of a
// pool-wide pause (pause.Config.Classify, and PausePreset's) and of a
// pool's creation backoff (pool.Config.BackPressure). To pause for other
// durations, wrap it:
//
//	func(err error) (time.Duration, bool) { _, ok := dbguard.BackPressure(err); return 5 * time.Second, ok }
func BackPressure(err error) (d time.Duration, ok bool) {
	v := Classify(err)
	return v.Pause, v.Class == ClassBackPressure
}

// IsTxRetryable reports whether the whole transaction may be run again
// (see Classification.IsTxRetryable): the RetryOn of a transaction's retry.
func IsTxRetryable(err error) bool { return Classify(err).IsTxRetryable() }

// ErrAmbiguous marks an error whose statement may or may not have taken
// effect at the server: a wrapper that knows the statement was sent wraps
// it (respool's ErrStatementLost and ErrTxOutcomeUnknown match it), and
// Classify puts such an error in ClassAmbiguous.
var ErrAmbiguous = errors.New("dbguard: outcome unknown: the statement may or may not have taken effect")
