package pause

import (
	"cmp"
	"errors"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// Config configures a Pause. The zero value of every field is the default
// written beside it.
type Config struct {
	// Name appears in events and errors.
	Name string
	// Classify maps an operation's error to "the server asks us to slow
	// down for d". Default nil: no error pauses (Hold still does). The
	// classifier of respool's DB-aware package has this type.
	Classify func(err error) (d time.Duration, ok bool)
	// DefaultPause is the pause when Classify says ok without a duration
	// (d <= 0). Default 1 second.
	DefaultPause time.Duration
	// MaxPause caps any pause, escalated or not. Default 15 minutes.
	MaxPause time.Duration
	// Escalation is the factor the pause grows by when the signal comes
	// again right after reopening. Default 2; 1 turns escalation off.
	Escalation float64
	// EscalationWindow is how soon after reopening a signal counts as
	// "again". Default 0: the length of the pause that just ended.
	EscalationWindow time.Duration
	// NoWait makes the closed gate reject a caller at once, with a
	// *resilience.RejectedError matching ErrPaused whose retry-after is the
	// opening, instead of holding it behind the gate: for callers that
	// have something better to do meanwhile (a pool serving from the
	// connections it has). Callers that arrive while the probe runs still
	// wait for its outcome, and are rejected the same way, at once, if the
	// gate closes again. Default false: callers wait behind the gate.
	NoWait bool
	// Clock is where time is read and the reopening timer set. Default
	// clock.System().
	Clock clock.Clock
	// Listener receives EventPaused, EventProbe, EventResumed, EventQueued
	// and EventRejected.
	Listener resilience.Listener
}

// Defaults of the zero Config.
const (
	DefaultPause      = time.Second
	DefaultMaxPause   = 15 * time.Minute
	DefaultEscalation = 2.0
)

const mechanism = "pause"

// ErrPaused is the reason of a rejection by a closed gate (matched with
// errors.Is; the error is a *resilience.RejectedError whose retry-after is
// the gate's opening).
var ErrPaused = errors.New("paused: the server asked to slow down")

// validate checks c and returns it with the defaults filled in.
func (c Config) validate() (Config, error) {
	checks := []error{
		resil.Check(c.DefaultPause >= 0, mechanism, "DefaultPause", c.DefaultPause, "a duration >= 0 (0: 1s)"),
		resil.Check(c.MaxPause >= 0, mechanism, "MaxPause", c.MaxPause, "a duration >= 0 (0: 15m)"),
		resil.Check(c.Escalation == 0 || c.Escalation >= 1, mechanism, "Escalation", c.Escalation, "0 (meaning 2) or a factor >= 1"),
		resil.Check(c.EscalationWindow >= 0, mechanism, "EscalationWindow", c.EscalationWindow, "a duration >= 0 (0: the last pause)"),
	}
	if err := resil.FirstError(checks...); err != nil {
		return c, err
	}
	c.DefaultPause = cmp.Or(c.DefaultPause, DefaultPause)
	c.MaxPause = cmp.Or(c.MaxPause, DefaultMaxPause)
	c.Escalation = cmp.Or(c.Escalation, DefaultEscalation)
	c.Clock = resil.ClockOr(c.Clock)
	return c, nil
}
