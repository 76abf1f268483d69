package leak

import "time"

// Config says how a pool tracks the objects it hands out.
//
// The zero Config tracks lost handles through the garbage collector without
// stack capture and has no hold-time threshold.
type Config struct {
	// Disabled turns garbage-collector tracking off: a take then allocates
	// nothing and a lost handle is never found. The hold-time threshold still
	// works when set.
	Disabled bool
	// CaptureStack records the taker's stack on every take, so that reports
	// name the code that took the object. It costs a stack walk per take.
	CaptureStack bool
	// HoldThreshold, when positive, reports a handle held longer than it,
	// once per take. Hold time is measured from the real time of the take (a
	// clock read per take, about 25 ns, only with a threshold set) and looked
	// at on each of the pool's ticks, so a hold is reported at most one
	// ValidationInterval after it passes the threshold, with its true length.
	// Zero turns the report off.
	HoldThreshold time.Duration
}
