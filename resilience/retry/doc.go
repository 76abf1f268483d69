// Package retry runs an operation again when it fails, waiting between
// attempts by a delay.Strategy (none, constant, linear, exponential or
// custom; capped; with full, equal or decorrelated jitter), up to a number
// of attempts and a total time.
//
// Application code calls it to retry any call by hand or in a
// compose.Stack. dbguard retries connection attempts with one built from
// its RetryPreset, package respool's RunInTx retries transactions with one,
// and httpguard's Transport retries requests with one.
//
// A failure that carries a retry-after (resilience.RetryAfter: a breaker's
// half-open time, a limiter's refill, a pause's end) is retried exactly at
// that time instead of after the strategy's delay; Config.RetryAfter reads
// one from errors the caller knows (a server's "slow down for d"). When that
// time lies past the end of the context or of MaxElapsed, Retry gives up at
// once instead of waiting in vain.
//
// Every wait ends with the context, and no attempt starts once it has
// ended (a Do called with an ended context runs nothing and returns its
// error). The caller's own context errors are never retried.
//
// A Retry is safe for concurrent use; each Do keeps its own count. The
// success path (first attempt succeeds) reads no clock and allocates
// nothing.
package retry
