package factory

import (
	"context"
	"errors"
)

// Factory creates, checks and destroys the objects of a pool.
//
// Implementations must be safe for concurrent use: a pool calls Create, Test
// and Destroy from several goroutines at once, though never two methods on the
// same object at the same time.
type Factory[T any] interface {
	// Create makes a new object. ctx carries the values of the caller whose
	// Take asked for the object (none for objects the pool makes on its own,
	// such as MinIdle's), the pool's CreateTimeout as its deadline, and is
	// cancelled when the pool closes; it is not cancelled when that caller
	// goes away: the object then serves the next one. The pool enforces the
	// timeout itself, and destroys an object returned after it; the
	// object's slot stays taken until then, so that the pool's MaxObjects
	// bounds the objects that exist.
	Create(ctx context.Context) (T, error)
	// Validate reports, quickly and without I/O, whether obj is still usable.
	// A non-nil error means the object is destroyed.
	Validate(obj T) error
	// Test checks obj thoroughly (for example a ping), bounded by ctx, which
	// carries the pool's TestTimeout and is cancelled when the pool closes. A
	// non-nil error means the object is destroyed; so does a Test that
	// outlives its timeout (the pool gives up on it at the timeout and
	// destroys the object when Test returns, keeping its slot until then).
	Test(ctx context.Context, obj T) error
	// Destroy releases obj. Its error is logged, never returned to a caller.
	Destroy(obj T) error
}

// ErrNoCreate is returned by Funcs.Create when no Create function was set.
var ErrNoCreate = errors.New("factory: no Create function")

// Funcs is a Factory made of functions. CreateFunc is required (pool.New
// refuses Funcs without it); a nil ValidateFunc or TestFunc accepts every
// object and a nil DestroyFunc does nothing.
type Funcs[T any] struct {
	CreateFunc   func(ctx context.Context) (T, error)
	ValidateFunc func(obj T) error
	TestFunc     func(ctx context.Context, obj T) error
	DestroyFunc  func(obj T) error
	// Hooks are the optional steps around Take and GiveBack.
	Hooks Hooks[T]
}

var (
	_ Factory[int]      = Funcs[int]{}
	_ HookProvider[int] = Funcs[int]{}
)

// LifecycleHooks returns f.Hooks.
func (f Funcs[T]) LifecycleHooks() Hooks[T] { return f.Hooks }

// Create calls CreateFunc.
func (f Funcs[T]) Create(ctx context.Context) (T, error) {
	if f.CreateFunc == nil {
		var zero T
		return zero, ErrNoCreate
	}
	return f.CreateFunc(ctx)
}

// Validate calls ValidateFunc, if set.
func (f Funcs[T]) Validate(obj T) error {
	if f.ValidateFunc == nil {
		return nil
	}
	return f.ValidateFunc(obj)
}

// Test calls TestFunc, if set.
func (f Funcs[T]) Test(ctx context.Context, obj T) error {
	if f.TestFunc == nil {
		return nil
	}
	return f.TestFunc(ctx, obj)
}

// Destroy calls DestroyFunc, if set.
func (f Funcs[T]) Destroy(obj T) error {
	if f.DestroyFunc == nil {
		return nil
	}
	return f.DestroyFunc(obj)
}
