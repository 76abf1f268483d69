package breaker

import "errors"

// State is the state of a Breaker.
type State uint8

// The states. Closed, Open and HalfOpen follow one another by themselves;
// the others hold until TransitionTo.
const (
	Closed State = iota
	Open
	HalfOpen
	ForcedOpen
	ForcedClosed
	MetricsOnly
	Disabled
	numStates
)

// records reports whether s records outcomes in a window.
func (s State) records() bool { return s == Closed || s == ForcedClosed || s == MetricsOnly }

var stateNames = [numStates]string{"closed", "open", "half_open", "forced_open", "forced_closed", "metrics_only", "disabled"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return "unknown"
}

// Reasons of a rejection, matched with errors.Is; the error itself is a
// *resilience.RejectedError.
var (
	ErrOpen         = errors.New("circuit open")
	ErrHalfOpenFull = errors.New("circuit half-open: its trial calls are taken")
	ErrForcedOpen   = errors.New("circuit forced open")
	ErrThrottled    = errors.New("throttled: the service is failing")
)

// errState is TransitionTo's error for a state the breaker's mode has not.
var errState = errors.New("breaker: TransitionTo")

// word packs a state and the generation that began with it: every
// transition starts a new generation, and an outcome whose permit is of an
// older generation is not recorded.
type word uint64

func makeWord(gen uint64, s State) word { return word(gen<<8 | uint64(s)) }
func (w word) state() State             { return State(w & 0xff) }
func (w word) gen() uint64              { return uint64(w) >> 8 }

// outcome is a recorded call: 0 is an empty slot of a count window.
type outcome uint32

const (
	recorded outcome = 1 << iota
	failed
	slow
)

func (o outcome) failures() int64 { return int64(o>>1) & 1 }
func (o outcome) slows() int64    { return int64(o>>2) & 1 }
