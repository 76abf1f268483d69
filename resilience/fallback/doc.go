// Package fallback replaces a failure with a value or with what a function
// computes from the error: a cached answer, a default, a degraded result.
// It is the outermost stage of a compose.Stack, so it sees the final
// failure, after every retry.
package fallback
