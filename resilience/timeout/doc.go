// Package timeout bounds an operation's duration: the operation runs with a
// context whose deadline is Config.Timeout away (or the caller's, when that
// is sooner), and a failure that the deadline caused (the operation
// returned its context's error) is reported as an error matching
// ErrTimeout and, through errors.Is and errors.As, the operation's error. An error of the
// operation's own that comes back after the deadline is returned as it is.
//
// Application code calls it, by hand or through a compose.Stack's Timeout
// slot; dbguard counts its ErrTimeout as a connection-level failure.
//
// The operation must honour its context (database drivers do); Timeout does
// not abandon a running operation in another goroutine, which would leak it
// and whatever connection it holds.
//
// A timeout is an attempt's failure, not the caller's: its error does not
// match context.DeadlineExceeded or context.Canceled, so an outer retry
// retries it, and a breaker counts it.
package timeout
