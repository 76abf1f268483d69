package resilience

import (
	"context"
	"log/slog"
	"time"
)

// EventKind says what happened.
type EventKind uint8

// The kinds of event. Their String values are stable: they are the "event"
// attribute of a logged Event.
const (
	EventStateChange  EventKind = iota + 1 // a state machine moved: From, To
	EventRejected                          // a call was refused: Err, RetryAt
	EventRetry                             // a retry is scheduled: Attempt, Delay, Err
	EventGiveUp                            // retries ended on a failure: Attempt, Err
	EventPaused                            // the gate closed or was extended: RetryAt (until), Delay, Err
	EventResumed                           // the gate opened again
	EventProbe                             // one call was let through to test a reopened gate
	EventQueued                            // a call waits in a queue: Waiting
	EventDrained                           // permits were emptied on a result: Err
	EventLimitChanged                      // a limit was changed at run time
	EventThreshold                         // a threshold was crossed without a transition (metrics-only): Err
	EventTimeout                           // an operation ran past its deadline
	EventFallback                          // a fallback replaced a failure: Err
	numEventKinds
)

var eventNames = [numEventKinds]string{"", "state_change", "rejected", "retry", "give_up",
	"paused", "resumed", "probe", "queued", "drained", "limit_changed", "threshold",
	"timeout", "fallback"}

func (k EventKind) String() string {
	if k == 0 || k >= numEventKinds {
		return "unknown"
	}
	return eventNames[k]
}

// Event is one thing a mechanism did. Fields that do not apply to its Kind
// are zero.
type Event struct {
	Time      time.Time
	Mechanism string // "breaker", "retry", "ratelimit", "pause", "bulkhead", "timeout", "fallback"
	Name      string // the mechanism's Config.Name
	Kind      EventKind
	From, To  string        // states, for EventStateChange
	Attempt   int           // attempts made so far, for retry events
	Delay     time.Duration // the wait that follows
	RetryAt   time.Time     // when a retry can succeed, or when a pause ends
	Waiting   int           // callers waiting
	Err       error         // the error behind the event
}

// Listener receives events. It is called synchronously by the goroutine the
// event happened on, sometimes with a mechanism's lock held: it must be quick
// and must not call back into the mechanism. Success paths emit no event.
type Listener func(Event)

// Attribute names of a logged Event; they are stable (see LogListener).
const (
	attrMechanism = "mechanism"
	attrName      = "name"
	attrEvent     = "event"
	attrFrom      = "from"
	attrTo        = "to"
	attrAttempt   = "attempt"
	attrDelay     = "delay"
	attrRetryAt   = "retry_at"
	attrWaiting   = "waiting"
	attrError     = "error"
)

// attrs returns e's fields as slog attributes under the stable names,
// leaving out those that are zero (Time is the record's own).
func (e Event) attrs() []slog.Attr {
	as := make([]slog.Attr, 0, 8)
	as = append(as, slog.String(attrMechanism, e.Mechanism))
	if e.Name != "" {
		as = append(as, slog.String(attrName, e.Name))
	}
	as = append(as, slog.String(attrEvent, e.Kind.String()))
	if e.From != "" || e.To != "" {
		as = append(as, slog.String(attrFrom, e.From), slog.String(attrTo, e.To))
	}
	if e.Attempt != 0 {
		as = append(as, slog.Int(attrAttempt, e.Attempt))
	}
	if e.Delay != 0 {
		as = append(as, slog.Duration(attrDelay, e.Delay))
	}
	if !e.RetryAt.IsZero() {
		as = append(as, slog.Time(attrRetryAt, e.RetryAt))
	}
	if e.Waiting != 0 {
		as = append(as, slog.Int(attrWaiting, e.Waiting))
	}
	if e.Err != nil {
		as = append(as, slog.String(attrError, e.Err.Error()))
	}
	return as
}

// LogListener returns a Listener that logs every event to l with the
// message "resilience": rejections, give-ups, pauses, timeouts and
// thresholds at Warn, the rest at Info. The record's time is the event's,
// and its attributes have stable names; those of zero fields are left out:
//
//	mechanism  Event.Mechanism ("breaker", "retry", ...)
//	name       Event.Name
//	event      Event.Kind's String ("state_change", "rejected", ...)
//	from, to   Event.From and Event.To (both, or neither)
//	attempt    Event.Attempt
//	delay      Event.Delay
//	retry_at   Event.RetryAt
//	waiting    Event.Waiting
//	error      Event.Err's message
//
// To log to several places, or to log and count, call each Listener from
// one of your own: func(e Event) { log(e); count(e) }.
func LogListener(l *slog.Logger) Listener {
	return func(e Event) {
		level := slog.LevelInfo
		switch e.Kind {
		case EventRejected, EventGiveUp, EventPaused, EventTimeout, EventThreshold:
			level = slog.LevelWarn
		}
		if !l.Enabled(context.Background(), level) {
			return
		}
		r := slog.NewRecord(e.Time, level, "resilience", 0)
		r.AddAttrs(e.attrs()...)
		_ = l.Handler().Handle(context.Background(), r)
	}
}
