// Package compose stacks the resilience mechanisms in one obvious way.
//
// Application code that wants several mechanisms in this order around one
// call calls it; dbguard runs its connection attempts through a Stack
// (retry, breaker, pause, limiter).
//
// A Stack names a slot for each mechanism, and the slots run in this fixed
// order, outermost first:
//
//	fallback → retry → breaker → pause → rate limiter → bulkhead → timeout → operation
//
// Why this order: the fallback sees the final outcome, after every retry;
// each retry goes through every guard again; the breaker is asked first so
// that an open circuit rejects at once, without waiting behind a pause or
// taking a permit from the limiter or a slot in the bulkhead; the pause holds
// callers before they spend rate-limit permits; the limiter meters calls
// before they take a bulkhead slot, so a slot is only held by a call about to
// run; and the timeout bounds the operation alone, not the waits before it.
// A rejection by any guard carries its retry-after, which the retry honours.
//
// The breaker, pause, rate limiter and bulkhead are resilience.Guards: Do
// enters them in order, runs the operation, and exits them in reverse with
// its outcome (an inner guard that did not admit the call, by a rejection or
// because the wait in it ended with the context, is reported to outer guards
// as an error matching resilience.ErrRejected, which they do not record). The retry,
// timeout and fallback are stages of the same loop, so a Do allocates
// nothing on its success path (the timeout excepted: a context with a
// deadline is the context package's allocation, skipped when the caller's
// deadline is already sooner).
package compose
