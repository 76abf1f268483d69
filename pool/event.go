package pool

import (
	"context"
	"log/slog"
	"time"
)

// EventKind says what happened to a pool.
//
// Each event is logged through Config.Logger, at the level its kind states,
// as a line whose attributes have stable names, for log queries. Every line
// carries:
//
//	pool                   Config.Name
//	event                  EventKind.String: create_failed, create_recovered, destroyed, ...
//
// and, as the event has them:
//
//	reason                 destroyed, destroy failed: the reason's name (Event.Reason)
//	error                  create failed, destroy failed: the factory's error
//	failures               create failed: failures since the last line; create recovered: in a row
//	in_a_row               create failed: failures in a row
//	next_attempt_in        create failed, while creations are held back
//	effective_max_objects  create failed and recovered, while back-pressure lowers it
//	recovered              create recovered: true
//	taken_at               LEAK-DETECTED, HELD-TOO-LONG: the taker's stack
//	action                 LEAK-DETECTED: what the pool did
//	held                   HELD-TOO-LONG: how long the Handle has been held
//	threshold              HELD-TOO-LONG: Config.HoldThreshold
type EventKind uint8

// The kinds of event. Their String values are stable: the "event"
// attribute of a log line.
const (
	// EventCreateFailed: a creation failed. Err, Failures (in a row),
	// RetryAt (the next attempt, while creations are held back). Logged by
	// state (see Config.FailureLogInterval): at Debug for the first of a
	// run that its caller got, at Warn once the run persists or for one
	// nobody got, then at a bounded rate, one line standing for the
	// failures since the last one.
	EventCreateFailed EventKind = iota + 1
	// EventCreateRecovered: a creation succeeded after Failures failed in a
	// row. Logged at Info (with the failure lines' bound) after a run
	// logged at Warn, else at Debug.
	EventCreateRecovered
	// EventDestroyed: an object was destroyed for Reason. Logged at Debug.
	EventDestroyed
	// EventDestroyFailed: the factory's Destroy failed (Err) for an object
	// destroyed for Reason; its slot is free all the same. Logged at Warn.
	EventDestroyFailed
	// EventLeak: a Handle was lost without GiveBack; its object is
	// destroyed and its slot freed. TakenAt. Logged at Error with the
	// message LEAK-DETECTED (stable, so that logs can be searched).
	EventLeak
	// EventHeldTooLong: a Handle has been held for Held, past Threshold
	// (Config.HoldThreshold); reported once per take. TakenAt. Logged at
	// Warn with the message HELD-TOO-LONG (stable).
	EventHeldTooLong
	// EventClosing: Close or StartClose was called. Logged at Debug.
	EventClosing
	// EventClosed: the pool has closed: its last object is destroyed.
	// Logged at Debug.
	EventClosed
	numEventKinds
)

var eventNames = [numEventKinds]string{"", "create_failed", "create_recovered", "destroyed", "destroy_failed",
	"leak_detected", "held_too_long", "closing", "closed"}

func (k EventKind) String() string {
	if k == 0 || k >= numEventKinds {
		return "unknown"
	}
	return eventNames[k]
}

// The messages of the leak reports; stable, so that logs can be searched.
const (
	msgLeak = "LEAK-DETECTED"
	msgHeld = "HELD-TOO-LONG"
)

// message is the log message of k.
func (k EventKind) message() string {
	switch k {
	case EventCreateFailed:
		return "create failed"
	case EventCreateRecovered:
		return "create recovered"
	case EventDestroyFailed:
		return "destroy failed"
	case EventLeak:
		return msgLeak
	case EventHeldTooLong:
		return msgHeld
	}
	return k.String()
}

// level is the log level of k.
func (k EventKind) level() slog.Level {
	switch k {
	case EventDestroyed, EventClosing, EventClosed:
		return slog.LevelDebug // routine: a plain driver's db.Close prints nothing either
	case EventCreateFailed, EventDestroyFailed, EventHeldTooLong:
		return slog.LevelWarn
	case EventLeak:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Event is one thing that happened to a pool, as Config.OnEvent receives
// it. Fields that do not apply to its Kind are zero.
type Event struct {
	Time     time.Time // on Config.Clock
	Pool     string    // Config.Name
	Kind     EventKind
	Reason   string    // EventDestroyed, EventDestroyFailed: the reason's name, a DestroyCounts field's JSON name ("idle", "leaked", ...)
	Err      error     // EventCreateFailed, EventDestroyFailed: the factory's error
	Failures int       // EventCreateFailed: in a row, this one included; EventCreateRecovered: the failures it ends
	RetryAt  time.Time // EventCreateFailed: the next attempt, while creations are held back
	// Held and Threshold are EventHeldTooLong's hold time and
	// Config.HoldThreshold.
	Held, Threshold time.Duration
	// TakenAt is the stack of the code that took the object (EventLeak,
	// EventHeldTooLong), or a note that Config.LeakCaptureStack is off.
	TakenAt string
}

// The attribute names of the pool's log lines, listed in EventKind's doc;
// they are stable.
const (
	attrPool          = "pool"
	attrEvent         = "event"
	attrReason        = "reason"
	attrError         = "error"
	attrFailures      = "failures"
	attrInARow        = "in_a_row"
	attrNextAttemptIn = "next_attempt_in"
	attrEffectiveMax  = "effective_max_objects"
	attrRecovered     = "recovered"
	attrTakenAt       = "taken_at"
	attrAction        = "action"
	attrHeld          = "held"
	attrThreshold     = "threshold"
)

// attrs returns e's fields as slog attributes under their names, leaving
// out those that do not apply (Time is the record's own).
func (e Event) attrs() []slog.Attr {
	as := []slog.Attr{slog.String(attrPool, e.Pool), slog.String(attrEvent, e.Kind.String())}
	switch e.Kind {
	case EventDestroyed, EventDestroyFailed:
		as = append(as, slog.String(attrReason, e.Reason))
	case EventCreateRecovered:
		as = append(as, slog.Int(attrFailures, e.Failures), slog.Bool(attrRecovered, true))
	case EventCreateFailed:
		as = append(as, slog.Int(attrInARow, e.Failures))
	case EventLeak:
		as = append(as, slog.String(attrTakenAt, e.TakenAt), slog.String(attrAction, "object destroyed and its slot freed"))
	case EventHeldTooLong:
		as = append(as, slog.Duration(attrHeld, e.Held), slog.Duration(attrThreshold, e.Threshold),
			slog.String(attrTakenAt, e.TakenAt))
	}
	if e.Err != nil {
		as = append(as, slog.Any(attrError, e.Err))
	}
	return as
}

// emit sends e to Config.OnEvent, and logs it when log is set. It costs a
// level check when neither wants it.
func (p *Pool[T]) emit(e Event, log bool) {
	level := e.Kind.level()
	log = log && p.cfg.Logger.Enabled(context.Background(), level)
	if p.cfg.OnEvent == nil && !log {
		return
	}
	e.Pool, e.Time = p.cfg.Name, p.cfg.Clock.Now()
	if p.cfg.OnEvent != nil {
		p.cfg.OnEvent(e)
	}
	if log {
		p.cfg.Logger.LogAttrs(context.Background(), level, e.Kind.message(), e.attrs()...)
	}
}

// destroyObject destroys obj for why, gives its slot of Config.Budget back
// (release, nil without one), reports it, and counts it.
func (p *Pool[T]) destroyObject(obj T, release func(), why destroyReason) {
	var err error
	if p.f.Destroy != nil {
		err = p.f.Destroy(obj)
	}
	if release != nil { // after Destroy: the slot is free once the object is gone
		release()
	}
	if err != nil {
		p.emit(Event{Kind: EventDestroyFailed, Reason: why.String(), Err: err}, true)
	} else {
		p.emit(Event{Kind: EventDestroyed, Reason: why.String()}, true)
	}
	p.counters.destroys[why].Add(1)
}
