package respoolotel

import (
	"context"
	"errors"
	"reflect"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/respool/respool/health"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
)

// scope is the instrumentation scope of the instruments.
const scope = "github.com/respool/respool/otel"

// Config configures Instrument. Its zero value records with the global
// MeterProvider.
type Config struct {
	// MeterProvider makes the instruments. Nil: otel.GetMeterProvider(),
	// the global one (a no-op until the program sets one).
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, makes spans under the callers' spans (none
	// for a caller without one): respool.take, a take from its call to the
	// connection in hand (respool.take.waiting: the callers it queued
	// behind), and respool.create, under it, the opening of a connection
	// made for it (respool's connection attempts, its breaker and pause
	// included; a pgx ConnectTracer's spans go under it). A failed one has
	// status Error, the error recorded and error.type: queue_full,
	// overloaded, acquire_timeout, failed_fast, closed, rejected (a
	// breaker, pause, rate limiter or the watch of a failover refused it),
	// canceled, deadline_exceeded, or the class of a server's or network's
	// error (dbguard.Class: connection, back-pressure, auth, ...), with
	// respool.create.failures (in a row), respool.retry_at (the next
	// attempt) and respool.rejected_by (the mechanism) when known. Nil: no
	// spans (otel.GetTracerProvider() for the global one). Statements'
	// spans are the real driver's tracer's (otelpgx through
	// respool.Config.PgxBeforeConnect) or otelsql's around the *sql.DB:
	// respool makes none, so that none is made twice.
	TracerProvider trace.TracerProvider
}

// durationBounds are the histograms' bucket boundaries, in seconds: the
// semantic conventions advise none for the pool's histograms, and these
// are those they advise for db.client.operation.duration.
var durationBounds = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// breakerStates are the states respool.breaker.state reports, 1 for the
// current one.
var breakerStates = []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen, breaker.ForcedOpen,
	breaker.ForcedClosed, breaker.MetricsOnly, breaker.Disabled}

// Instrument records the metrics of src, the pool named name (the
// attribute db.client.connection.pool.name of every one), until stop is
// called. The instruments follow the OpenTelemetry semantic conventions
// for database client connection pools (v1.43.0; in development there):
//
//   - db.client.connection.count {connection}, by db.client.connection.state:
//     idle (Stats.Idle and Stats.Testing: idle connections under their
//     check) and used (Stats.InUse);
//   - db.client.connection.max and .idle.max {connection}: Stats.MaxObjects
//     (the pool keeps no separate idle limit), .idle.min: Stats.MinIdle;
//   - db.client.connection.pending_requests {request}: Stats.Waiting;
//   - db.client.connection.timeouts {timeout}: Stats.AcquireTimeouts;
//   - db.client.connection.wait_time, .create_time and .use_time (s),
//     histograms recorded as each take, connection opening and hold ends
//     (the pool's Observer, which Instrument sets through src.Observe), with
//     the bucket boundaries the conventions advise for
//     db.client.operation.duration: 1, 5, 10, 50, 100, 500 ms, 1, 5, 10 s.
//
// And respool's own, read from Stats and the breaker and pause of src:
// respool.connection.effective_max {connection} (the size back-pressure
// allows now), respool.connection.create_failures, .leaks, .held_too_long
// and .destroys {connection} (the last by respool.destroy.reason, a
// pool.DestroyCounts field's JSON name), respool.take.failed_fast,
// .overloaded and .queue_full {take}, respool.breaker.state {state} (1 for
// the current state, by respool.breaker.state), respool.breaker.transitions
// {transition} and .rejected {call}, respool.pause.holding {pause} (1 while
// the pause holds calls back) and respool.pauses {pause}; and for a pool
// whose budget is shared with other processes (pool.Stats.Budget),
// respool.budget.held, .share, .borrowed {connection}, .members {process},
// .store_down {store} (1 while its store does not answer) and .refused
// {connection}.
//
// The counts and counters are read when the reader collects; without a
// src.Observe the histograms are not made. A pool has one Observer: a
// second Instrument of the same pool takes over its histograms and spans,
// and the first one's stop would take the second's Observer off (stop the
// first before instrumenting again). stop unregisters the callback and
// takes the Observer off.
func Instrument(name string, src health.Source, cfg Config) (stop func() error, err error) {
	if src.Stats == nil {
		return nil, errors.New("respoolotel: Instrument: the source has no Stats")
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(scope)
	poolName := attribute.String("db.client.connection.pool.name", name)
	only := metric.WithAttributeSet(attribute.NewSet(poolName))
	with := func(kv ...attribute.KeyValue) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(append([]attribute.KeyValue{poolName}, kv...)...))
	}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	count, err := dbconv.NewClientConnectionCountObservable(m)
	check(err)
	maxConns, err := dbconv.NewClientConnectionMaxObservable(m)
	check(err)
	idleMax, err := dbconv.NewClientConnectionIdleMaxObservable(m)
	check(err)
	idleMin, err := dbconv.NewClientConnectionIdleMinObservable(m)
	check(err)
	pending, err := dbconv.NewClientConnectionPendingRequestsObservable(m)
	check(err)
	timeouts, err := dbconv.NewClientConnectionTimeoutsObservable(m)
	check(err)
	gauge := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		i, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return i
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		i, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return i
	}
	effectiveMax := gauge("respool.connection.effective_max", "{connection}",
		"The most connections the pool opens now: its maximum, or fewer while back-pressure holds it down.")
	createFailures := counter("respool.connection.create_failures", "{connection}", "Connection openings that failed.")
	leaks := counter("respool.connection.leaks", "{connection}", "Connections whose handle was lost without being given back, found and reclaimed.")
	heldTooLong := counter("respool.connection.held_too_long", "{connection}", "Connections reported held past the pool's hold threshold.")
	destroys := counter("respool.connection.destroys", "{connection}", "Connections closed by the pool, by reason.")
	failedFast := counter("respool.take.failed_fast", "{take}", "Takes failed at once while connection openings fail.")
	overloaded := counter("respool.take.overloaded", "{take}", "Takes failed fast by the overload policy.")
	queueFull := counter("respool.take.queue_full", "{take}", "Takes refused because the wait queue was full.")
	breakerState, err := m.Int64ObservableGauge("respool.breaker.state", metric.WithUnit("{state}"),
		metric.WithDescription("1 for the circuit breaker's current state, 0 for the others."))
	check(err)
	transitions := counter("respool.breaker.transitions", "{transition}", "Circuit breaker transitions and resets.")
	rejected := counter("respool.breaker.rejected", "{call}", "Calls the circuit breaker refused.")
	holding, err := m.Int64ObservableGauge("respool.pause.holding", metric.WithUnit("{pause}"),
		metric.WithDescription("1 while the pause holds calls back (the server asked to slow down)."))
	check(err)
	pauses := counter("respool.pauses", "{pause}", "Pauses set or extended.")
	budgetHeld := gauge("respool.budget.held", "{connection}", "Slots of the budget shared with other processes that this process holds.")
	budgetShare := gauge("respool.budget.share", "{connection}", "Slots of the shared budget guaranteed to this process.")
	budgetMembers := gauge("respool.budget.members", "{process}", "Processes sharing the budget, this one included.")
	budgetBorrowed := gauge("respool.budget.borrowed", "{connection}", "Slots held beyond the share: other processes' unused shares.")
	storeDown, err := m.Int64ObservableGauge("respool.budget.store_down", metric.WithUnit("{store}"),
		metric.WithDescription("1 while the budget's store does not answer: the process keeps within the slots it held."))
	check(err)
	budgetRefused := counter("respool.budget.refused", "{connection}", "Slots of the shared budget asked for and refused: none free.")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	idle := with(count.AttrClientConnectionState(dbconv.ClientConnectionStateIdle))
	used := with(count.AttrClientConnectionState(dbconv.ClientConnectionStateUsed))
	reasons := reflect.VisibleFields(reflect.TypeFor[pool.DestroyCounts]())
	byReason := make([]metric.ObserveOption, len(reasons))
	for i, f := range reasons {
		byReason[i] = with(attribute.String("respool.destroy.reason", f.Tag.Get("json")))
	}
	byState := make([]metric.ObserveOption, len(breakerStates))
	for i, s := range breakerStates {
		byState[i] = with(attribute.String("respool.breaker.state", s.String()))
	}
	instruments := []metric.Observable{count.Inst(), maxConns.Inst(), idleMax.Inst(), idleMin.Inst(), pending.Inst(),
		timeouts.Inst(), effectiveMax, createFailures, leaks, heldTooLong, destroys, failedFast, overloaded, queueFull}
	if src.Breaker != nil {
		instruments = append(instruments, breakerState, transitions, rejected)
	}
	if src.Pause != nil {
		instruments = append(instruments, holding, pauses)
	}
	if src.Stats().Budget != nil {
		instruments = append(instruments, budgetHeld, budgetShare, budgetMembers, budgetBorrowed, storeDown, budgetRefused)
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := src.Stats()
		o.ObserveInt64(count.Inst(), int64(s.Idle+s.Testing), idle)
		o.ObserveInt64(count.Inst(), int64(s.InUse), used)
		o.ObserveInt64(maxConns.Inst(), int64(s.MaxObjects), only)
		o.ObserveInt64(idleMax.Inst(), int64(s.MaxObjects), only)
		o.ObserveInt64(idleMin.Inst(), int64(s.MinIdle), only)
		o.ObserveInt64(pending.Inst(), int64(s.Waiting), only)
		o.ObserveInt64(timeouts.Inst(), int64(s.AcquireTimeouts), only)
		o.ObserveInt64(effectiveMax, int64(s.EffectiveMaxObjects), only)
		o.ObserveInt64(createFailures, int64(s.CreateFailures), only)
		o.ObserveInt64(leaks, int64(s.LeaksDetected), only)
		o.ObserveInt64(heldTooLong, int64(s.HeldTooLong), only)
		d := reflect.ValueOf(s.Destroys)
		for i := range reasons {
			o.ObserveInt64(destroys, int64(d.Field(i).Uint()), byReason[i])
		}
		o.ObserveInt64(failedFast, int64(s.FailedFast), only)
		o.ObserveInt64(overloaded, int64(s.Overloaded), only)
		o.ObserveInt64(queueFull, int64(s.QueueFull), only)
		if b := src.Breaker; b != nil {
			st := b.Stats()
			for i, state := range breakerStates {
				o.ObserveInt64(breakerState, boolInt(st.State == state), byState[i])
			}
			o.ObserveInt64(transitions, int64(st.Transitions), only)
			o.ObserveInt64(rejected, int64(st.Rejected), only)
		}
		if p := src.Pause; p != nil {
			st := p.State()
			o.ObserveInt64(holding, boolInt(st.Holding()), only)
			o.ObserveInt64(pauses, int64(st.Pauses), only)
		}
		if b := s.Budget; b != nil {
			o.ObserveInt64(budgetHeld, int64(b.Held), only)
			o.ObserveInt64(budgetShare, int64(b.Share), only)
			o.ObserveInt64(budgetMembers, int64(b.Members), only)
			o.ObserveInt64(budgetBorrowed, int64(b.Borrowed), only)
			o.ObserveInt64(storeDown, boolInt(b.StoreDown), only)
			o.ObserveInt64(budgetRefused, int64(b.Refused), only)
		}
		return nil
	}, instruments...)
	if err != nil {
		return nil, err
	}
	if src.Observe != nil {
		obs, err := observer(m, poolName)
		if err != nil {
			_ = reg.Unregister()
			return nil, err
		}
		if tp := cfg.TracerProvider; tp != nil {
			tr := tracing{tracer: tp.Tracer(scope), poolName: poolName}
			obs.Taking, obs.Creating = tr.taking, tr.creating
		}
		src.Observe(obs)
	}
	return func() error {
		if src.Observe != nil {
			src.Observe(nil)
		}
		return reg.Unregister()
	}, nil
}

// observer returns the pool Observer recording the three histograms.
func observer(m metric.Meter, poolName attribute.KeyValue) (*pool.Observer, error) {
	bounds := metric.WithExplicitBucketBoundaries(durationBounds...)
	wait, err1 := dbconv.NewClientConnectionWaitTime(m, bounds)
	create, err2 := dbconv.NewClientConnectionCreateTime(m, bounds)
	use, err3 := dbconv.NewClientConnectionUseTime(m, bounds)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	// One option slice for every record: a Record of a precomputed set
	// allocates nothing.
	opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(poolName))}
	record := func(h metric.Float64Histogram) func(time.Duration) {
		return func(d time.Duration) { h.Record(context.Background(), d.Seconds(), opts...) }
	}
	return &pool.Observer{Wait: record(wait.Inst()), Create: record(create.Inst()), Use: record(use.Inst())}, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
