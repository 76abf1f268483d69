package resilience

import "context"

// Guard is an admission mechanism: the breaker, the pause, the rate limiter
// and the bulkhead. Enter admits a call or rejects it; every admitted call
// is ended by exactly one Exit with its outcome. Stacking guards is then a
// loop over Enter and a loop over Exit in reverse, with no closure per call
// (see package compose).
type Guard interface {
	// Enter admits one call, waiting when the guard queues (bounded by ctx
	// and the guard's own limits), or returns an error that matches
	// ErrRejected (and usually carries a retry-after, see RetryAfter), or
	// ctx's error.
	Enter(ctx context.Context) (Permit, error)
	// Exit ends the call p admitted. err is the call's outcome: nil on
	// success; an error matching ErrRejected when a guard inside this one
	// did not admit the call (it rejected it, or the wait in it ended with
	// the context), so that it never ran.
	Exit(p Permit, err error)
}

// Permit is what a Guard's Enter hands out and its Exit takes back. Its
// fields mean what the guard that made it says; callers only carry it.
type Permit struct {
	Token uint64
	Since int64
}

// Do runs op under g: Enter, op, Exit with op's error.
func Do[T any](ctx context.Context, g Guard, op func(context.Context) (T, error)) (T, error) {
	p, err := g.Enter(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := op(ctx)
	g.Exit(p, err)
	return v, err
}
