package health

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/respool/respool/pool"
)

// The JSON view of a Report: snake_case names, durations in seconds
// (float, suffix _seconds), times in RFC 3339, zero times and absent
// mechanisms left out, destroys by reason name.

type jsonReport struct {
	Time  time.Time  `json:"time"`
	Pools []jsonPool `json:"pools"`
}

type jsonPool struct {
	Name                 string            `json:"name"`
	Closed               bool              `json:"closed"`
	MaxObjects           int               `json:"max_objects"`
	EffectiveMaxObjects  int               `json:"effective_max_objects"`
	Total                int               `json:"total"`
	Idle                 int               `json:"idle"`
	InUse                int               `json:"in_use"`
	Creating             int               `json:"creating"`
	Waiting              int               `json:"waiting"`
	Queued               int               `json:"queued"`
	Takes                uint64            `json:"takes"`
	Waits                uint64            `json:"waits"`
	QueueFull            uint64            `json:"queue_full"`
	FailedFast           uint64            `json:"failed_fast"`
	Overloaded           uint64            `json:"overloaded"`
	CancelledWaits       uint64            `json:"cancelled_waits"`
	AcquireTimeouts      uint64            `json:"acquire_timeouts"`
	Creates              uint64            `json:"creates"`
	CreateFailures       uint64            `json:"create_failures"`
	Destroys             map[string]uint64 `json:"destroys"`
	LeaksDetected        uint64            `json:"leaks_detected"`
	HeldTooLong          uint64            `json:"held_too_long"`
	AcquireWait          []jsonQuantile    `json:"acquire_wait"`
	CreateFailuresInARow int               `json:"create_failures_in_a_row"`
	LastCreateError      string            `json:"last_create_error,omitempty"`
	LastCreateErrorAt    *time.Time        `json:"last_create_error_at,omitempty"`
	NextCreateAttempt    *time.Time        `json:"next_create_attempt,omitempty"`
	Breaker              *jsonBreaker      `json:"breaker,omitempty"`
	Pause                *jsonPause        `json:"pause,omitempty"`
	Limiter              *jsonLimiter      `json:"limiter,omitempty"`
	Budget               *jsonBudget       `json:"budget,omitempty"`
}

type jsonQuantile struct {
	Q       float64 `json:"q"`
	Seconds float64 `json:"seconds"`
	AtLeast bool    `json:"at_least,omitempty"`
}

type jsonBreaker struct {
	State       string     `json:"state"`
	OpenUntil   *time.Time `json:"open_until,omitempty"`
	Calls       int64      `json:"calls"`
	Failures    int64      `json:"failures"`
	SlowCalls   int64      `json:"slow_calls"`
	FailureRate float64    `json:"failure_rate"`
	Openings    int        `json:"openings"`
	Rejected    uint64     `json:"rejected"`
	Transitions uint64     `json:"transitions"`
}

type jsonPause struct {
	Holding          bool       `json:"holding"`
	Until            *time.Time `json:"until,omitempty"`
	Reason           string     `json:"reason,omitempty"`
	Waiting          int        `json:"waiting"`
	LastPauseSeconds float64    `json:"last_pause_seconds"`
	Pauses           uint64     `json:"pauses"`
}

type jsonLimiter struct {
	Waiting   int    `json:"waiting"`
	Rejected  uint64 `json:"rejected"`
	QueueFull uint64 `json:"queue_full"`
	TimedOut  uint64 `json:"timed_out"`
}

type jsonBudget struct {
	Held         int    `json:"held"`
	Share        int    `json:"share"`
	Members      int    `json:"members"`
	Borrowed     int    `json:"borrowed"`
	Reclaiming   int    `json:"reclaiming"`
	Unregistered int    `json:"unregistered"`
	StoreDown    bool   `json:"store_down"`
	Refused      uint64 `json:"refused"`
	StoreErrors  uint64 `json:"store_errors"`
}

// MarshalJSON writes the JSON view of r.
func (r Report) MarshalJSON() ([]byte, error) {
	v := jsonReport{Time: r.Time, Pools: make([]jsonPool, 0, len(r.Pools))}
	for _, p := range r.Pools {
		v.Pools = append(v.Pools, p.view())
	}
	return json.Marshal(v)
}

// MarshalJSON writes the JSON view of p.
func (p PoolReport) MarshalJSON() ([]byte, error) { return json.Marshal(p.view()) }

func (p PoolReport) view() jsonPool {
	v := jsonPool{
		Name: p.Name, Closed: p.Closed, MaxObjects: p.MaxObjects, EffectiveMaxObjects: p.EffectiveMaxObjects,
		Total: p.Total, Idle: p.Idle, InUse: p.InUse, Creating: p.Creating, Waiting: p.Waiting, Queued: p.Queued,
		Takes: p.Takes, Waits: p.Waits, QueueFull: p.QueueFull, FailedFast: p.FailedFast, Overloaded: p.Overloaded,
		CancelledWaits: p.CancelledWaits, AcquireTimeouts: p.AcquireTimeouts,
		Creates: p.Creates, CreateFailures: p.CreateFailures, Destroys: destroysByReason(p.Destroys),
		LeaksDetected: p.LeaksDetected, HeldTooLong: p.HeldTooLong,
		AcquireWait:          make([]jsonQuantile, 0, len(p.AcquireWait)),
		CreateFailuresInARow: p.CreateFailuresInARow, LastCreateError: p.LastCreateError,
		LastCreateErrorAt: timeOrNil(p.LastCreateErrorAt), NextCreateAttempt: timeOrNil(p.NextCreateAttempt),
	}
	for _, q := range p.AcquireWait {
		v.AcquireWait = append(v.AcquireWait, jsonQuantile{Q: q.Q, Seconds: q.Wait.Seconds(), AtLeast: q.AtLeast})
	}
	if b := p.Breaker; b != nil {
		v.Breaker = &jsonBreaker{State: b.State.String(), OpenUntil: timeOrNil(b.OpenUntil), Calls: b.Calls,
			Failures: b.Failures, SlowCalls: b.SlowCalls, FailureRate: b.FailureRate, Openings: b.Openings,
			Rejected: b.Rejected, Transitions: b.Transitions}
	}
	if s := p.Pause; s != nil {
		v.Pause = &jsonPause{Holding: s.Holding, Until: timeOrNil(s.Until), Reason: s.Reason, Waiting: s.Waiting,
			LastPauseSeconds: s.LastPause.Seconds(), Pauses: s.Pauses}
	}
	if l := p.Limiter; l != nil {
		v.Limiter = &jsonLimiter{Waiting: l.Waiting, Rejected: l.Rejected, QueueFull: l.QueueFull, TimedOut: l.TimedOut}
	}
	if b := p.Budget; b != nil {
		j := jsonBudget(*b)
		v.Budget = &j
	}
	return v
}

// destroysByReason is d as a map from each reason's name (its field's JSON
// name: "idle", "leaked", ...) to its count, zero counts included.
func destroysByReason(d pool.DestroyCounts) map[string]uint64 {
	v := reflect.ValueOf(d)
	m := make(map[string]uint64, v.NumField())
	for i, f := range reflect.VisibleFields(v.Type()) {
		m[f.Tag.Get("json")] = v.Field(i).Uint()
	}
	return m
}

type jsonReadiness struct {
	Ready bool            `json:"ready"`
	Pools []jsonPoolReady `json:"pools"`
}

type jsonPoolReady struct {
	Name    string     `json:"name"`
	Ready   bool       `json:"ready"`
	Reason  string     `json:"reason,omitempty"`
	RetryAt *time.Time `json:"retry_at,omitempty"`
}

// MarshalJSON writes the JSON view of r.
func (r Readiness) MarshalJSON() ([]byte, error) {
	v := jsonReadiness{Ready: r.Ready, Pools: make([]jsonPoolReady, 0, len(r.Pools))}
	for _, p := range r.Pools {
		v.Pools = append(v.Pools, jsonPoolReady{Name: p.Name, Ready: p.Ready, Reason: p.Reason, RetryAt: timeOrNil(p.RetryAt)})
	}
	return json.Marshal(v)
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
