package delay

import (
	"math"
	"math/rand/v2"
	"time"
)

// Kind is how the delay grows with the attempt number.
type Kind uint8

// The kinds of strategy.
const (
	Default     Kind = iota // the mechanism's documented default strategy
	None                    // no delay
	Constant                // Initial every time
	Linear                  // Initial × attempt
	Exponential             // Initial × Multiplier^(attempt−1)
	Custom                  // Func(attempt, err)
)

var kindNames = [...]string{"default", "none", "constant", "linear", "exponential", "custom"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Jitter randomises a delay so that callers who failed together do not
// retry together (AWS's "Exponential backoff and jitter").
type Jitter uint8

// The kinds of jitter.
const (
	NoJitter     Jitter = iota // the delay as computed
	Full                       // uniform in [0, d]
	Equal                      // d/2 + uniform in [0, d/2]
	Decorrelated               // uniform in [Initial, 3 × previous delay], capped by Max
)

var jitterNames = [...]string{"none", "full", "equal", "decorrelated"}

func (j Jitter) String() string {
	if int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return "unknown"
}

// Strategy computes the delay before attempt n+1 after attempt n failed
// (n starts at 1).
type Strategy struct {
	Kind       Kind
	Initial    time.Duration // the first delay (Constant, Linear, Exponential)
	Multiplier float64       // growth per attempt (Exponential); 0 means 2
	Max        time.Duration // cap on any delay; 0 means no cap
	Jitter     Jitter
	// Func computes the delay for Custom from the attempt number and the
	// error of that attempt; Max and Jitter still apply.
	Func func(attempt int, err error) time.Duration
	// Rand returns a uniform float in [0, 1) for the jitter; nil means
	// math/rand/v2. Tests may fix it.
	Rand func() float64
}

// Constants returns a Constant strategy of d.
func Constants(d time.Duration) Strategy { return Strategy{Kind: Constant, Initial: d} }

// Exponentials returns an Exponential strategy from initial, doubling, capped at max.
func Exponentials(initial, max time.Duration) Strategy {
	return Strategy{Kind: Exponential, Initial: initial, Multiplier: 2, Max: max}
}

// Delay returns the delay after attempt (1 for the first) failed with err;
// prev is the delay returned for the attempt before (0 for the first), used
// by Decorrelated jitter.
func (s Strategy) Delay(attempt int, prev time.Duration, err error) time.Duration {
	var d time.Duration
	switch s.Kind {
	case Constant:
		d = s.Initial
	case Linear:
		d = mulCapped(s.Initial, float64(attempt))
	case Exponential:
		m := s.Multiplier
		if m == 0 {
			m = 2
		}
		d = mulCapped(s.Initial, math.Pow(m, float64(attempt-1)))
	case Custom:
		d = s.Func(attempt, err)
	default:
		return 0
	}
	d = max(s.capped(d), 0)
	switch s.Jitter {
	case Full:
		d = uniform(0, d, s.rand())
	case Equal:
		d = uniform(d/2, d, s.rand())
	case Decorrelated:
		hi := time.Duration(math.MaxInt64)
		if prev < math.MaxInt64/3 {
			hi = 3 * prev
		}
		lo := max(s.Initial, 0)
		d = s.capped(uniform(lo, max(hi, lo), s.rand()))
	}
	return d
}

// uniform returns a duration in [lo, hi] (0 <= lo <= hi) from a draw r in
// [0, 1); at the largest durations it saturates instead of wrapping.
func uniform(lo, hi time.Duration, r float64) time.Duration {
	return lo + min(fromFloat(r*(float64(hi-lo)+1)), hi-lo)
}

func (s Strategy) capped(d time.Duration) time.Duration {
	if s.Max > 0 && d > s.Max {
		return s.Max
	}
	return d
}

func (s Strategy) rand() float64 {
	if s.Rand != nil {
		return s.Rand()
	}
	return rand.Float64()
}

// mulCapped returns d×f, saturating instead of overflowing.
func mulCapped(d time.Duration, f float64) time.Duration { return fromFloat(float64(d) * f) }

// fromFloat converts v >= 0 nanoseconds to a Duration, saturating at the
// largest one (float64(math.MaxInt64) is 2⁶³, out of range).
func fromFloat(v float64) time.Duration {
	if v >= math.MaxInt64 || math.IsInf(v, 0) || math.IsNaN(v) {
		return math.MaxInt64
	}
	return time.Duration(v)
}
