package factory

import (
	"context"
	"database/sql/driver"
)

// Hooks are optional steps of an object's life besides Create, Validate,
// Test and Destroy, in the manner of pgxpool's AfterConnect, BeforeAcquire
// and AfterRelease. Each is bounded by a timeout of the pool; a nil hook is
// skipped and costs nothing.
type Hooks[T any] struct {
	// AfterCreate prepares a new object before its first use (for example
	// SET application_name, SET search_path). It runs as part of the
	// creation, under the same context (the asking caller's values, the
	// pool's CreateTimeout, cancelled by Close): an error fails the creation
	// as an error of Create would, and the object is destroyed.
	AfterCreate func(ctx context.Context, obj T) error
	// BeforeHandOut checks an object taken from idle just before Take hands
	// it out, in the caller's goroutine, with the caller's context bounded by
	// the pool's TestTimeout (for example database/sql's ResetSession, see
	// ResetSession). An error rejects the object: it is destroyed and Take
	// looks for another. It is not called for an object created for that
	// Take, which AfterCreate has just prepared.
	BeforeHandOut func(ctx context.Context, obj T) error
	// AfterGiveBack runs after an object is given back and before it is
	// idle again, in the background, bounded by the pool's TestTimeout and by
	// its Close (for example to discard session state). An error, or running
	// past the timeout, discards the object. GiveBack does not wait for it.
	AfterGiveBack func(ctx context.Context, obj T) error
}

// HookProvider is a Factory with Hooks. The pool calls LifecycleHooks once,
// when it is made.
type HookProvider[T any] interface {
	LifecycleHooks() Hooks[T]
}

// ResetSession is a BeforeHandOut hook for database/sql connections: it
// calls the connection's driver.SessionResetter, when it has one, with the
// caller's context, as database/sql does before it reuses a connection
// (drivers check there that an idle connection is still alive).
func ResetSession(ctx context.Context, conn driver.Conn) error {
	if sr, ok := conn.(driver.SessionResetter); ok {
		return sr.ResetSession(ctx)
	}
	return nil
}
