package testctx

import "context"

// Deadline is a context whose deadline passes when the test calls Expire:
// a call can be in flight, or waiting, when it expires, without timing the
// test. Its values are its parent's; its Done and Err are its own.
type Deadline struct {
	context.Context
	done chan struct{}
}

// NewDeadline returns a Deadline over parent that has not expired.
func NewDeadline(parent context.Context) *Deadline {
	return &Deadline{Context: parent, done: make(chan struct{})}
}

// Expire makes the deadline pass; call it once.
func (c *Deadline) Expire() { close(c.done) }

// Done is closed by Expire.
func (c *Deadline) Done() <-chan struct{} { return c.done }

// Err is context.DeadlineExceeded once expired, nil before.
func (c *Deadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
