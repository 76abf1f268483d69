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
	EventReset                             // state was reset by hand
	numEventKinds
)

var eventNames = [numEventKinds]string{"", "state_change", "rejected", "retry", "give_up",
	"paused", "resumed", "probe", "queued", "drained", "limit_changed", "threshold",
	"timeout", "fallback", "reset"}

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

// Attribute names of a logged Event; they are stable.
const (
	AttrMechanism = "mechanism"
	AttrName      = "name"
	AttrEvent     = "event"
	AttrFrom      = "from"
	AttrTo        = "to"
	AttrAttempt   = "attempt"
	AttrDelay     = "delay"
	AttrRetryAt   = "retry_at"
	AttrWaiting   = "waiting"
	AttrError     = "error"
)

// Attrs returns e's fields as slog attributes under the stable Attr names,
// leaving out those that are zero (Time is the record's own).
func (e Event) Attrs() []slog.Attr {
	as := make([]slog.Attr, 0, 8)
	as = append(as, slog.String(AttrMechanism, e.Mechanism))
	if e.Name != "" {
		as = append(as, slog.String(AttrName, e.Name))
	}
	as = append(as, slog.String(AttrEvent, e.Kind.String()))
	if e.From != "" || e.To != "" {
		as = append(as, slog.String(AttrFrom, e.From), slog.String(AttrTo, e.To))
	}
	if e.Attempt != 0 {
		as = append(as, slog.Int(AttrAttempt, e.Attempt))
	}
	if e.Delay != 0 {
		as = append(as, slog.Duration(AttrDelay, e.Delay))
	}
	if !e.RetryAt.IsZero() {
		as = append(as, slog.Time(AttrRetryAt, e.RetryAt))
	}
	if e.Waiting != 0 {
		as = append(as, slog.Int(AttrWaiting, e.Waiting))
	}
	if e.Err != nil {
		as = append(as, slog.String(AttrError, e.Err.Error()))
	}
	return as
}

// LogListener returns a Listener that logs every event to l with the
// message "resilience" and the attributes of Event.Attrs: rejections,
// give-ups, pauses and timeouts at Warn, the rest at Info.
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
		r.AddAttrs(e.Attrs()...)
		_ = l.Handler().Handle(context.Background(), r)
	}
}

// Listeners returns a Listener that calls each of ls in order.
func Listeners(ls ...Listener) Listener {
	return func(e Event) {
		for _, l := range ls {
			if l != nil {
				l(e)
			}
		}
	}
}
