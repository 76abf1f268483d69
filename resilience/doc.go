// Package resilience holds what respool's resilience mechanisms share: the
// retry-after protocol by which a rejection says when a retry can succeed,
// the Guard contract by which mechanisms are stacked, the Events they emit
// and the ConfigError their Configs report.
//
// Code that combines or observes mechanisms calls it: a Guard of its own, a
// Listener of their Events, a caller matching ErrRejected or reading
// RetryAfter. Each mechanism package imports it, and so do pool, dbguard,
// health, httpguard and package respool.
//
// Each mechanism lives in a package of its own under this one and imports
// only this package, package clock, respool's internal plumbing, the
// standard library and golang.org/x/...:
//
//   - retry: attempts with delays (none, constant, linear, exponential,
//     custom; capped; jittered) that honour a retry-after;
//   - breaker: a circuit breaker over a count- or time-based sliding window,
//     or Google SRE's adaptive client-side throttling;
//   - ratelimit: token bucket, fixed window, sliding log, sliding window
//     counter and leaky bucket, with a bounded FIFO queue, keys and a Store;
//   - pause: a gate that holds every caller while a server asks to slow down;
//   - bulkhead, timeout, fallback;
//   - compose: one Stack that runs them in the default order, outermost
//     first: fallback, retry, breaker, pause, rate limiter, bulkhead, timeout.
//
// None of them knows anything about databases: what counts as a failure, or
// as a server's "slow down for d", is a predicate the caller supplies.
//
// Time is injected: every mechanism reads its Config's Clock (a clock.Clock;
// clock.System() when nil), and package clock/clocktest has a virtual clock
// for tests.
package resilience
