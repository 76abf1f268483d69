package pool

import (
	"context"
	"time"
)

// Observer is told what the pool measures as it happens, for a metrics
// library to record (the OpenTelemetry instruments of module
// github.com/respool/respool/otel record them as
// db.client.connection.wait_time, .create_time and .use_time), and when
// takes and creations begin and end, for a tracer. Each func, when set, is
// called on the goroutine of the event (a caller's, or the pool's own for
// Create and Creating) and must return at once: record and go. Durations
// are on Config.Clock.
type Observer struct {
	// Wait is told how long each successful Take took, from its call to
	// the object in hand, those served at once included.
	Wait func(time.Duration)
	// Create is told how long each successful creation ran (the factory's
	// Create and AfterCreate).
	Create func(time.Duration)
	// Use is told how long each object taken since Observe was held, when
	// it is given back or discarded (not when the pool reclaims it as
	// leaked: that hold ended when its Handle was lost, which the pool
	// learns later).
	Use func(time.Duration)

	// Taking, when set, is called as each Take begins, with its context
	// and the number of callers waiting then (those it queues behind if it
	// cannot be served at once); the Take runs with the context it returns,
	// whose values reach a creation made for it (Creating), and calls end
	// with its error as it returns (nil: the object in hand). For a tracer:
	// a span of the take.
	Taking func(ctx context.Context, waiting int) (_ context.Context, end func(error))
	// Creating, when set, is called as each creation begins, on the
	// creation's goroutine, with its context: the values of the Take's
	// context it is made for (none for one made for MinIdle), bounded by
	// CreateTimeout. The factory's Create and AfterCreate run with the
	// context it returns, and end is called with their error.
	Creating func(ctx context.Context) (_ context.Context, end func(error))
}

// Observe sets the Observer the pool tells from now on (nil: none),
// replacing the one set before. Without one a Take and a GiveBack cost one
// atomic load more; with one, two clock readings more.
func (p *Pool[T]) Observe(o *Observer) { p.observer.Store(o) }
