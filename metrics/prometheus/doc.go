// Package prometheus exports respool pools as Prometheus metrics: a
// Collector (of github.com/prometheus/client_golang) reads the pools of a
// health.Checker, their Stats and the state of the breaker, pause and rate
// limiter guarding them, at every scrape. It is a module of its own, so that respool's core does
// not require the Prometheus client.
//
// A service's main calls it, to register a Collector for the
// health.Checker it serves (as examples/observability does); no package of
// respool imports it.
//
// Every metric has the label pool, the name a source was added to the
// Checker under.
// Counters end in _total, durations are in seconds:
//
//	respool_objects                      gauge     objects alive (created, being created or tested)
//	respool_idle_objects                 gauge     objects idle
//	respool_in_use_objects               gauge     objects held by callers
//	respool_waiting_callers              gauge     callers waiting for an object
//	respool_max_objects                  gauge     Config.MaxObjects
//	respool_effective_max_objects        gauge     the size back-pressure allows now
//	respool_takes_total                  counter   objects handed out
//	respool_queue_full_total             counter   takes refused: wait queue full
//	respool_failed_fast_total            counter   takes failed at once while creations fail
//	respool_overloaded_total             counter   takes failed by the overload policy
//	respool_cancelled_waits_total        counter   takes whose context ended while waiting
//	respool_acquire_timeouts_total       counter   takes ended by Config.AcquireTimeout
//	respool_creates_total                counter   objects created
//	respool_create_failures_total        counter   creations failed
//	respool_destroys_total{reason}       counter   objects destroyed, by reason (a pool.DestroyCounts field)
//	respool_leaks_total                  counter   lost handles found and reclaimed
//	respool_held_too_long_total          counter   handles reported past HoldThreshold
//	respool_acquire_wait_seconds         histogram how long takes waited (the pool's buckets)
//	respool_breaker_state{state}         gauge     1 for the breaker's current state, 0 for the others
//	respool_breaker_transitions_total    counter   breaker transitions
//	respool_breaker_rejected_total       counter   calls the breaker refused
//	respool_pause_holding                gauge     1 while the pause holds calls back
//	respool_pauses_total                 counter   pauses set or extended
//	respool_limiter_waiting              gauge     callers queued in the rate limiter
//	respool_limiter_rejected_total       counter   calls the rate limiter refused
//	respool_budget_held                  gauge     slots of the budget shared with other processes held here
//	respool_budget_share                 gauge     slots of it guaranteed to this process
//	respool_budget_members               gauge     processes sharing it, this one included
//	respool_budget_borrowed              gauge     slots held beyond the share
//	respool_budget_store_down            gauge     1 while its store (Redis, the database) does not answer
//	respool_budget_refused_total         counter   slots asked for and refused
//
// The breaker, pause and limiter metrics appear only for sources that have
// them (health.Source's fields), the budget's for pools whose
// pool.Config.Budget reports itself (pool.Stats.Budget). The acquire-wait histogram's buckets are
// the pool's own (1µs, 2µs, 4µs ... about 67s; a Take counts in the first
// bucket whose bound exceeds its wait) and its sum the total time of the
// Takes that waited.
package prometheus
