// Package fallback replaces a failure with a value or with what a function
// computes from the error: a cached answer, a default, a degraded result.
// It is the outermost stage of a compose.Stack, so it sees the final
// failure, after every retry.
//
// Application code calls it, by hand or through that slot of a
// compose.Stack; no other package of the library imports it.
//
// The caller's own end is not a failure to replace: once the caller's
// context is cancelled or past its deadline, the failure is returned as it
// is, matching the context's error, so that a caller that gave up is not
// told that its call succeeded. (A timeout inside, resilience/timeout, is
// an attempt's failure and is replaced.)
package fallback
