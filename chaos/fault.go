package chaos

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sync/atomic"
	"time"
)

// Fault is one fault a Connector injects: what it does (Kind and its
// parameters), to which calls (On), and when (Rate, Every, During, Off).
//
// A call is considered by a Fault when its op is in On, the Fault is on
// (see Off) and, with During, the time since the Connector started is in
// one of the windows. Of the calls it considers, the Fault hits every
// Every-th (every one when Every is 0), and of those each with probability
// Rate (all when Rate is 0). Each Fault counts the calls it considers on its
// own, and its random draws depend only on the Connector's seed, its Name
// and that count: the same seed hits the same calls.
type Fault struct {
	// Name identifies the Fault in Stats, Events, Enable and Disable; it
	// must be unique in a Config. Empty: the Kind's name.
	Name string
	// Kind is what the Fault does. Required.
	Kind Kind
	// On is the set of calls the Fault applies to. Zero: OpConnect for
	// KindRefuse, OpStatements (Exec and Query) otherwise. KindRefuse
	// accepts OpConnect only; KindDrop every op but OpConnect.
	On Op
	// Rate is the probability, in [0, 1], that the Fault hits a call it
	// considers (after Every). 0 means 1: every such call.
	Rate float64
	// Every makes the Fault consider only every Every-th call (the Every-th,
	// the 2·Every-th, ...). 0 or 1: every call.
	Every int
	// During limits the Fault to windows of time since the Connector
	// started (NewConnector), read from Config.Clock. Nil: always.
	During []Window
	// Off starts the Fault switched off; Connector.Enable switches it on.
	Off bool

	// Latency is KindLatency's fixed delay.
	Latency time.Duration
	// Jitter is KindLatency's random part: a delay uniform in [0, Jitter)
	// is added to Latency.
	Jitter time.Duration
	// Err is KindError's error; PgError and MySQLError build the drivers'
	// values. Each hit returns a copy of a *pgconn.PgError or
	// *mysql.MySQLError, other errors as they are.
	Err error
	// AfterSend makes a KindDrop break the connection after the call ran on
	// the server instead of before it was sent.
	AfterSend bool
}

// Window is a span of time since the Connector started: [From, To), or
// from From on when To is 0.
type Window struct {
	From, To time.Duration
}

func (w Window) contains(d time.Duration) bool {
	return d >= w.From && (w.To == 0 || d < w.To)
}

// text writes w as the DSN key chaos_FAULT_during does: FROM-TO, or FROM-
// without an end.
func (w Window) text() string {
	if w.To == 0 {
		return w.From.String() + "-"
	}
	return w.From.String() + "-" + w.To.String()
}

// normalize returns f with its defaults filled in, or an error naming what
// is wrong.
func (f Fault) normalize() (Fault, error) {
	if f.Name == "" {
		f.Name = f.Kind.String()
	}
	bad := func(format string, args ...any) (Fault, error) {
		return f, fmt.Errorf("%w: fault %q: %s", ErrInvalidConfig, f.Name, fmt.Sprintf(format, args...))
	}
	if f.Kind < KindLatency || f.Kind > KindFreeze {
		return bad("Kind %v: want KindLatency, KindError, KindDrop, KindRefuse or KindFreeze", f.Kind)
	}
	if f.On == 0 {
		f.On = OpStatements
		if f.Kind == KindRefuse {
			f.On = OpConnect
		}
	}
	switch {
	case f.On >= opEnd:
		return bad("On %v: unknown ops", f.On)
	case f.Kind == KindRefuse && f.On != OpConnect:
		return bad("On %v: KindRefuse applies to OpConnect only", f.On)
	case f.Kind == KindDrop && f.On&OpConnect != 0:
		return bad("On %v: KindDrop does not apply to OpConnect (use KindRefuse)", f.On)
	case !(f.Rate >= 0 && f.Rate <= 1): // NaN too
		return bad("Rate %v: want a probability in [0, 1]", f.Rate)
	case f.Every < 0:
		return bad("Every %d: want ≥ 0", f.Every)
	case f.Latency < 0 || f.Jitter < 0:
		return bad("Latency %v, Jitter %v: want durations ≥ 0", f.Latency, f.Jitter)
	case f.Kind == KindLatency && f.Latency == 0 && f.Jitter == 0:
		return bad("KindLatency needs Latency or Jitter")
	case f.Kind == KindError && f.Err == nil:
		return bad("KindError needs Err (PgError, MySQLError)")
	}
	for _, w := range f.During {
		if w.From < 0 || w.To < 0 || w.To != 0 && w.To <= w.From {
			return bad("window %s: want 0 ≤ From < To, or To = 0 (no end)", w.text())
		}
	}
	return f, nil
}

// fault is a Fault at work in a Connector.
type fault struct {
	Fault
	stream   uint64 // the Fault's random stream: a hash of its Name
	fatal    bool   // KindError: Err ends the session on a real server
	on       atomic.Bool
	calls    atomic.Int64 // calls considered
	injected atomic.Int64 // calls hit
	latency  atomic.Int64 // KindLatency: the delay added, in nanoseconds
}

func newFault(f Fault) *fault {
	h := fnv.New64a()
	h.Write([]byte(f.Name))
	rt := &fault{Fault: f, stream: h.Sum64(), fatal: f.Kind == KindError && endsSession(f.Err)}
	rt.on.Store(!f.Off)
	return rt
}

// consider counts a call of op made at elapsed since the Connector started,
// if f considers it, and reports whether f hits it and the call's number
// among those f considered.
func (f *fault) consider(op Op, elapsed time.Duration, seed uint64) (n int64, hit bool) {
	if f.On&op == 0 || !f.on.Load() || !f.inWindow(elapsed) {
		return 0, false
	}
	n = f.calls.Add(1)
	if f.Every > 1 && n%int64(f.Every) != 0 {
		return n, false
	}
	if f.Rate > 0 && f.Rate < 1 && draw(seed, f.stream, uint64(n)) >= f.Rate {
		return n, false
	}
	return n, true
}

func (f *fault) inWindow(elapsed time.Duration) bool {
	if len(f.During) == 0 {
		return true
	}
	for _, w := range f.During {
		if w.contains(elapsed) {
			return true
		}
	}
	return false
}

// delay returns KindLatency's delay for the n-th call f considered.
func (f *fault) delay(seed uint64, n int64) time.Duration {
	d := f.Latency
	if f.Jitter > 0 {
		d += time.Duration(draw(seed, ^f.stream, uint64(n)) * float64(f.Jitter))
	}
	return d
}

// err returns KindError's error for one hit: a copy of the drivers' error
// values, so that callers cannot change each other's.
func (f *fault) err() error { return cloneError(f.Err) }

// draw returns a number in [0, 1) that depends only on its arguments.
func draw(seed, stream, n uint64) float64 {
	return float64(mix(mix(seed^mix(stream))+n)>>11) / (1 << 53)
}

// mix is SplitMix64's finalizer: a bijection of uint64 whose outputs for
// consecutive inputs look independent.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// ErrUnknownFault is returned by Connector.Enable and Disable for a name no
// Fault has.
var ErrUnknownFault = errors.New("chaos: unknown fault")
