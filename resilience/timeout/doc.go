// Package timeout bounds an operation's duration: the operation runs with a
// context whose deadline is Config.Timeout away (or the caller's, when that
// is sooner), and a failure past that deadline is reported as an *Error
// matching ErrTimeout.
//
// The operation must honour its context (database drivers do); Timeout does
// not abandon a running operation in another goroutine, which would leak it
// and whatever connection it holds.
//
// A timeout is an attempt's failure, not the caller's: its error does not
// match context.DeadlineExceeded, so an outer retry retries it, and a
// breaker counts it.
package timeout
