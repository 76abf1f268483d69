package prometheus

import (
	"reflect"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/respool/respool/health"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
)

// Collector is a prometheus.Collector of the pools of a health.Checker:
// add a pool to the Checker once, and it is both checked and exported. It
// is safe for concurrent use; register it once (prometheus.MustRegister).
type Collector struct {
	checker *health.Checker
}

var _ prom.Collector = (*Collector)(nil)

// NewCollector returns a Collector of checker's sources, each under the
// label pool=its name. Sources added to or removed from checker later are
// exported or dropped from the next scrape on.
func NewCollector(checker *health.Checker) *Collector { return &Collector{checker: checker} }

func desc(name, help string, labels ...string) *prom.Desc {
	return prom.NewDesc("respool_"+name, help, append([]string{"pool"}, labels...), nil)
}

var (
	descObjects        = desc("objects", "Objects alive, counting those being created and tested.")
	descIdle           = desc("idle_objects", "Objects idle in the pool.")
	descInUse          = desc("in_use_objects", "Objects held by callers.")
	descWaiting        = desc("waiting_callers", "Callers waiting for an object.")
	descMax            = desc("max_objects", "The most objects the pool may hold (Config.MaxObjects).")
	descEffectiveMax   = desc("effective_max_objects", "The most objects the pool makes now: MaxObjects, or fewer under back-pressure.")
	descTakes          = desc("takes_total", "Objects handed out by Take and TryTake.")
	descQueueFull      = desc("queue_full_total", "Takes refused because the wait queue was full.")
	descFailedFast     = desc("failed_fast_total", "Takes failed at once while creations fail.")
	descOverloaded     = desc("overloaded_total", "Takes failed fast by the overload policy.")
	descCancelled      = desc("cancelled_waits_total", "Takes whose context ended while waiting.")
	descAcquireTimeout = desc("acquire_timeouts_total", "Takes ended by Config.AcquireTimeout.")
	descCreates        = desc("creates_total", "Objects created.")
	descCreateFailures = desc("create_failures_total", "Creations that failed.")
	descDestroys       = desc("destroys_total", "Objects destroyed, by reason.", "reason")
	descLeaks          = desc("leaks_total", "Handles lost without GiveBack, found and reclaimed.")
	descHeld           = desc("held_too_long_total", "Handles reported held past HoldThreshold.")
	descWait           = desc("acquire_wait_seconds", "How long Takes waited for an object, those served at once included.")

	descBreakerState       = desc("breaker_state", "1 for the circuit breaker's current state, 0 for the others.", "state")
	descBreakerTransitions = desc("breaker_transitions_total", "Circuit breaker transitions and resets.")
	descBreakerRejected    = desc("breaker_rejected_total", "Calls the circuit breaker refused.")
	descPauseHolding       = desc("pause_holding", "1 while the pause holds calls back (the server asked to slow down).")
	descPauses             = desc("pauses_total", "Pauses set or extended.")
	descLimiterWaiting     = desc("limiter_waiting", "Callers queued in the rate limiter.")
	descLimiterRejected    = desc("limiter_rejected_total", "Calls the rate limiter refused.")
	descBudgetHeld         = desc("budget_held", "Slots of the budget shared with other processes that this process holds.")
	descBudgetShare        = desc("budget_share", "Slots of the shared budget guaranteed to this process.")
	descBudgetMembers      = desc("budget_members", "Processes sharing the budget, this one included.")
	descBudgetBorrowed     = desc("budget_borrowed", "Slots held beyond the share: other processes' unused shares.")
	descBudgetStoreDown    = desc("budget_store_down", "1 while the budget's store does not answer: the process keeps within the slots it held.")
	descBudgetRefused      = desc("budget_refused_total", "Slots of the shared budget asked for and refused: none free.")

	allDescs = []*prom.Desc{descObjects, descIdle, descInUse, descWaiting, descMax, descEffectiveMax,
		descTakes, descQueueFull, descFailedFast, descOverloaded, descCancelled, descAcquireTimeout,
		descCreates, descCreateFailures, descDestroys, descLeaks, descHeld, descWait,
		descBreakerState, descBreakerTransitions, descBreakerRejected, descPauseHolding, descPauses,
		descLimiterWaiting, descLimiterRejected,
		descBudgetHeld, descBudgetShare, descBudgetMembers, descBudgetBorrowed, descBudgetStoreDown, descBudgetRefused}

	// breakerStates are the states exported by respool_breaker_state.
	breakerStates = []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen, breaker.ForcedOpen,
		breaker.ForcedClosed, breaker.MetricsOnly, breaker.Disabled}
)

// Describe sends the descriptors of every metric the Collector may export.
func (c *Collector) Describe(ch chan<- *prom.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect reads every source and sends its metrics.
func (c *Collector) Collect(ch chan<- prom.Metric) {
	for name, src := range c.checker.Sources() {
		collectSource(ch, name, src)
	}
}

func collectSource(ch chan<- prom.Metric, name string, src health.Source) {
	gauge := func(d *prom.Desc, v float64, labels ...string) {
		ch <- prom.MustNewConstMetric(d, prom.GaugeValue, v, append([]string{name}, labels...)...)
	}
	counter := func(d *prom.Desc, v uint64, labels ...string) {
		ch <- prom.MustNewConstMetric(d, prom.CounterValue, float64(v), append([]string{name}, labels...)...)
	}
	s := src.Stats()
	gauge(descObjects, float64(s.Total))
	gauge(descIdle, float64(s.Idle))
	gauge(descInUse, float64(s.InUse))
	gauge(descWaiting, float64(s.Waiting))
	gauge(descMax, float64(s.MaxObjects))
	gauge(descEffectiveMax, float64(s.EffectiveMaxObjects))
	counter(descTakes, s.Takes)
	counter(descQueueFull, s.QueueFull)
	counter(descFailedFast, s.FailedFast)
	counter(descOverloaded, s.Overloaded)
	counter(descCancelled, s.CancelledWaits)
	counter(descAcquireTimeout, s.AcquireTimeouts)
	counter(descCreates, s.Creates)
	counter(descCreateFailures, s.CreateFailures)
	d := reflect.ValueOf(s.Destroys) // a field a reason, named by its JSON name
	for i, f := range reflect.VisibleFields(d.Type()) {
		counter(descDestroys, d.Field(i).Uint(), f.Tag.Get("json"))
	}
	counter(descLeaks, s.LeaksDetected)
	counter(descHeld, s.HeldTooLong)
	ch <- waitHistogram(name, s)

	if b := src.Breaker; b != nil {
		st := b.Stats()
		for _, state := range breakerStates {
			gauge(descBreakerState, bit(st.State == state), state.String())
		}
		counter(descBreakerTransitions, st.Transitions)
		counter(descBreakerRejected, st.Rejected)
	}
	if p := src.Pause; p != nil {
		st := p.State()
		gauge(descPauseHolding, bit(st.Holding()))
		counter(descPauses, st.Pauses)
	}
	if l := src.Limiter; l != nil {
		st := l.Stats()
		gauge(descLimiterWaiting, float64(st.Waiting))
		counter(descLimiterRejected, st.Rejected)
	}
	if b := s.Budget; b != nil {
		gauge(descBudgetHeld, float64(b.Held))
		gauge(descBudgetShare, float64(b.Share))
		gauge(descBudgetMembers, float64(b.Members))
		gauge(descBudgetBorrowed, float64(b.Borrowed))
		gauge(descBudgetStoreDown, bit(b.StoreDown))
		counter(descBudgetRefused, b.Refused)
	}
}

// bit is 1 for true, 0 for false.
func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// waitHistogram is the pool's acquire-wait histogram as a constant
// Prometheus histogram: cumulative counts at the pool's finite bounds, in
// seconds; the last, unbounded bucket is +Inf (the count).
func waitHistogram(name string, s pool.Stats) prom.Metric {
	h := s.WaitHistogram
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		cum += h.Counts[i]
		if b > 0 {
			buckets[b.Seconds()] = cum
		}
	}
	return prom.MustNewConstHistogram(descWait, cum, s.WaitTime.Seconds(), buckets, name)
}
