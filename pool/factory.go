package pool

import "context"

// Factory is what a pool needs to make, check and destroy its objects, and
// the optional steps of an object's life around Take and GiveBack (in the
// manner of pgxpool's AfterConnect, BeforeAcquire and AfterRelease). Create
// is required; every other nil func is skipped and costs nothing.
//
// The funcs must be safe for concurrent use: a pool calls Create, Test and
// Destroy from several goroutines at once, though never two of them on the
// same object at the same time. The pool copies the Factory when it is made:
// changing a func afterwards has no effect.
type Factory[T any] struct {
	// Create makes a new object. ctx carries the values of the caller whose
	// Take asked for the object (none for objects the pool makes on its own,
	// such as MinIdle's), the pool's CreateTimeout as its deadline, and is
	// cancelled when the pool closes; it is not cancelled when that caller
	// goes away: the object then serves the next one. The pool enforces the
	// timeout itself, and destroys an object returned after it; the
	// object's slot stays taken until then, so that the pool's MaxObjects
	// bounds the objects that exist. Required.
	Create func(ctx context.Context) (T, error)
	// Validate reports, quickly and without I/O, whether obj is still usable;
	// it runs on every hand-out and give-back. A non-nil error means the
	// object is destroyed. Nil means every object is valid.
	Validate func(obj T) error
	// Test checks obj thoroughly (for example a ping), bounded by ctx, which
	// carries the pool's TestTimeout and is cancelled when the pool closes;
	// it runs on idle objects only. A non-nil error means the object is
	// destroyed; so does a Test that outlives its timeout (the pool gives up
	// on it at the timeout and destroys the object when Test returns,
	// keeping its slot until then). Nil means every object passes.
	Test func(ctx context.Context, obj T) error
	// Destroy releases obj. Its error is logged, never returned to a caller.
	// Nil means there is nothing to release.
	Destroy func(obj T) error

	// AfterCreate prepares a new object before its first use (for example
	// SET application_name, SET search_path). It runs as part of the
	// creation, under the same context (the asking caller's values, the
	// pool's CreateTimeout, cancelled by Close): an error fails the creation
	// as an error of Create would, and the object is destroyed.
	AfterCreate func(ctx context.Context, obj T) error
	// BeforeHandOut checks an object taken from idle just before Take hands
	// it out, in the caller's goroutine, with the caller's context bounded by
	// the pool's TestTimeout (for example database/sql's ResetSession). An
	// error rejects the object: it is destroyed and Take looks for another.
	// It is not called for an object created for that Take, which
	// AfterCreate has just prepared.
	BeforeHandOut func(ctx context.Context, obj T) error
	// AfterGiveBack runs after an object is given back and before it is
	// idle again, in the background, bounded by the pool's TestTimeout and by
	// its Close (for example to discard session state). An error, or running
	// past the timeout, discards the object. GiveBack does not wait for it.
	AfterGiveBack func(ctx context.Context, obj T) error
}
