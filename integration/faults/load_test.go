package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	rpool "github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

const (
	callers      = 64
	callDeadline = time.Second          // every call's deadline
	pollEvery    = 5 * time.Millisecond // waits for a state poll this often
	finishBound  = 10 * time.Second     // for callers to return once told to stop
)

// call is one call of a caller.
type call struct {
	start, end time.Duration // since the load began
	class      string        // "" for a success, else errorClass of its error
}

func (c call) latency() time.Duration { return c.end - c.start }

// callerModel is how callers call again after an error.
type callerModel int

const (
	// eager callers call again at once after an error.
	eager callerModel = iota
	// polite callers wait, after an error, for as long as the error says a
	// call cannot succeed (callBackoff); the same rule for every client.
	polite
)

// label is the model's suffix in the report's rows: none for eager
// callers.
func (m callerModel) label() string {
	if m == polite {
		return ", polite callers"
	}
	return ""
}

// politeRule is the report caption's account of polite callers.
const politeRule = "rows marked \"polite callers\" run the same scenario with callers that, after an error, wait " +
	"until the retry-after time the error carries (resilience.RetryAfter: a breaker open until then, creations held back " +
	"until then) or, after respool's *pool.OverloadError, its measured mean hold, at most the call's deadline; " +
	"errors that carry no such time (every error of pgx stdlib, pgxpool and mysql) are followed by the next call at once"

// load is callers goroutines calling a pool back to back, each call with
// callDeadline; polite callers wait after an error (see callerModel).
type load struct {
	model    callerModel
	t0       time.Time
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	calls    [][]call       // per caller; read only after finish
	lastOK   []atomic.Int64 // per caller: end of its latest success, ns since t0; -1 before any
}

func startLoad(p pool, q string, model callerModel) *load {
	l := &load{model: model, t0: time.Now(), stop: make(chan struct{}), calls: make([][]call, callers),
		lastOK: make([]atomic.Int64, callers)}
	for i := range callers {
		l.lastOK[i].Store(-1)
		l.wg.Go(func() { l.caller(i, p, q) })
	}
	return l
}

func (l *load) caller(i int, p pool, q string) {
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(suiteCtx, callDeadline)
		start := time.Since(l.t0)
		err := p.query(ctx, q)
		end := time.Since(l.t0)
		cancel()
		c := call{start: start, end: end}
		if err != nil {
			c.class = errorClass(err)
		} else {
			l.lastOK[i].Store(int64(end))
		}
		l.calls[i] = append(l.calls[i], c)
		if err != nil && l.model == polite && !l.backOff(err) {
			return
		}
	}
}

// backOff waits for callBackoff(err); it reports false if the load was
// stopped meanwhile.
func (l *load) backOff(err error) bool {
	d := callBackoff(err)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.stop:
		return false
	}
}

// callBackoff is how long a polite caller waits after err before it calls
// again: until the retry-after time the error carries
// (resilience.RetryAfter), or, for a pool that failed the call fast because
// it could not serve it before its deadline (*pool.OverloadError), the mean
// hold it measured; at most callDeadline. Other errors carry no such time:
// the caller calls again at once.
func callBackoff(err error) time.Duration {
	var d time.Duration
	var overload *rpool.OverloadError
	if at, ok := resilience.RetryAfter(err); ok {
		d = time.Until(at)
	} else if errors.As(err, &overload) {
		d = overload.Hold
	}
	return min(d, callDeadline)
}

// at returns t as a time since the load began.
func (l *load) at(t time.Time) time.Duration { return t.Sub(l.t0) }

// waitAllOK waits until every caller has had a success that ended after
// t, for at most bound.
func (l *load) waitAllOK(ctx context.Context, t time.Time, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	after := int64(l.at(t))
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		waiting := 0
		for i := range l.lastOK {
			if l.lastOK[i].Load() < after {
				waiting++
			}
		}
		if waiting == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d callers had no success within %v", waiting, callers, bound)
		}
	}
}

// finish stops the callers and waits for them to return, for at most
// finishBound: a call that outlives its deadline by that much is stuck.
// Later calls wait again.
func (l *load) finish() error {
	l.stopOnce.Do(func() { close(l.stop) })
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	t := time.NewTimer(finishBound)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return errors.New("callers still in a call 10 s after they were told to stop: a call ignores its deadline")
	}
}

// started returns the calls that started in [from, to), of every caller.
func (l *load) started(from, to time.Duration) []call {
	return l.where(func(c call) bool { return c.start >= from && c.start < to })
}

// ended returns the calls that ended in [from, to), of every caller.
func (l *load) ended(from, to time.Duration) []call {
	return l.where(func(c call) bool { return c.end >= from && c.end < to })
}

func (l *load) where(keep func(call) bool) []call {
	var out []call
	for _, cs := range l.calls {
		for _, c := range cs {
			if keep(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// recovery returns, for calls that succeeded ending at or after from, how
// long after back the first one ended and the first success of the
// slowest caller ended (0 when before back); all is false when some caller
// had no such success.
func (l *load) recovery(from, back time.Duration) (first, last time.Duration, all bool) {
	first, all = -1, true
	for _, cs := range l.calls {
		i := slices.IndexFunc(cs, func(c call) bool { return c.class == "" && c.end >= from })
		if i < 0 {
			all = false
			continue
		}
		d := max(cs[i].end-back, 0)
		if first < 0 || d < first {
			first = d
		}
		last = max(last, d)
	}
	return first, last, all
}

// latencies returns p99 and the maximum latency of calls; 0 for none.
func latencies(calls []call) (p99, maxLat time.Duration) {
	if len(calls) == 0 {
		return 0, 0
	}
	ds := make([]time.Duration, len(calls))
	for i, c := range calls {
		ds[i] = c.latency()
	}
	slices.Sort(ds)
	return ds[(len(ds)*99+99)/100-1], ds[len(ds)-1]
}

// succeeded returns how many of calls succeeded.
func succeeded(calls []call) int {
	n := 0
	for _, c := range calls {
		if c.class == "" {
			n++
		}
	}
	return n
}
