package pool

import "time"

// Observer is told what the pool measures as it happens, for a metrics
// library to record (the OpenTelemetry instruments of module
// github.com/respool/respool/otel record them as
// db.client.connection.wait_time, .create_time and .use_time). Each func,
// when set, is called on the goroutine of the event (a caller's, or the
// pool's own for Create) and must return at once: record and go.
// Durations are on Config.Clock.
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
}

// Observe sets the Observer the pool tells from now on (nil: none),
// replacing the one set before. Without one a Take and a GiveBack cost one
// atomic load more; with one, two clock readings more.
func (p *Pool[T]) Observe(o *Observer) { p.observer.Store(o) }
