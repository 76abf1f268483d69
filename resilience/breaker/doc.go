// Package breaker is a circuit breaker: it fails calls fast while the
// service behind it is failing, and lets a few through to test it again.
//
// Application code calls it to guard any call (HTTP, RPC, a database) by
// hand or in a compose.Stack. dbguard builds one breaker per database from
// its BreakerPreset, httpguard's Transport takes one, and health and
// metrics/prometheus read its Stats.
//
// In the CountWindow (default) and TimeWindow modes the breaker is a state
// machine:
//
//   - Closed: calls run and their outcomes are recorded in a sliding window,
//     count-based (CountWindow: the last WindowSize calls) or time-based
//     (TimeWindow: the calls of the last WindowDuration, in WindowBuckets
//     buckets). Once the window
//     holds MinimumCalls calls and the failure rate reaches FailureRate, or
//     the rate of calls slower than SlowCallDuration reaches SlowCallRate,
//     the circuit opens.
//   - Open: calls are rejected with a *resilience.RejectedError matching
//     ErrOpen and carrying the time the circuit half-opens (its
//     retry-after), for OpenDelay: constant, or exponential and capped,
//     growing with each opening in a row.
//   - HalfOpen: HalfOpenCalls calls are let through; once all have ended
//     the circuit closes, or opens again if their failure or slow rate
//     reaches the threshold, or if HalfOpenMaxWait passes first. Further
//     calls are rejected (ErrHalfOpenFull).
//
// Manual states hold until changed: ForcedOpen rejects everything;
// ForcedClosed admits everything and keeps recording; MetricsOnly admits
// everything, records, and emits EventThreshold where it would have opened;
// Disabled admits everything and records nothing. TransitionTo moves to any
// state; TransitionTo(Closed) starts afresh (an empty window, the open delay
// back to its first value).
//
// In Adaptive mode the breaker has no open state; it is Google SRE's
// client-side throttling: it rejects each call locally with probability
// max(0, (requests − K·accepts) / (requests + 1)) over a time window, so it
// sheds load in proportion to the failure rate instead of all or nothing.
//
// IsFailure and IsIgnored decide what an error means; rejections by inner
// guards (resilience.ErrRejected) are never recorded. Transitions are lazy:
// they happen when a call or an observer (State, Stats) comes, so a Breaker
// needs no goroutine and no timer. A reopening after HalfOpenMaxWait takes
// effect as of the time it was due, as if a timer had fired then: its open
// delay runs from that time, not from the first call that finds it.
//
// The closed-state success path of a count-window breaker without slow-call
// detection reads no clock, takes no lock, writes no shared memory once the
// window is full of successes, and allocates nothing.
package breaker
