package breaker

import (
	"sync"
	"sync/atomic"
)

// tally is what a window holds: calls, failures and slow calls.
type tally struct{ calls, failures, slow int64 }

// window records outcomes. record returns the tally after the outcome and
// whether it may have crossed a threshold (false when nothing changed).
type window interface {
	record(o outcome, now int64) (tally, bool)
	tally(now int64) tally
}

// countWindow holds the outcomes of the last len(ring) calls. It is lock
// free: each slot is swapped atomically and the counters follow the swaps,
// so they equal the ring's contents whenever no record is in flight.
type countWindow struct {
	ring     []atomic.Uint32 // outcomes; 0 is a slot never written
	next     atomic.Uint64   // the slot the next outcome goes to, mod len(ring)
	calls    atomic.Int64    // written slots, up to len(ring)
	failures atomic.Int64
	slow     atomic.Int64
}

func newCountWindow(size int) *countWindow {
	return &countWindow{ring: make([]atomic.Uint32, size)}
}

func (w *countWindow) record(o outcome, _ int64) (tally, bool) {
	// A success replacing a success changes nothing: while the ring is full
	// and holds no failure and no slow call, a success need not be written.
	// Which slot the next failure overwrites does not matter either, since
	// every slot holds the same.
	if o == recorded && w.failures.Load() == 0 && w.slow.Load() == 0 && w.calls.Load() == int64(len(w.ring)) {
		return tally{}, false
	}
	i := w.next.Add(1) - 1
	old := outcome(w.ring[i%uint64(len(w.ring))].Swap(uint32(o)))
	if old == 0 {
		w.calls.Add(1)
	}
	if d := o.failures() - old.failures(); d != 0 {
		w.failures.Add(d)
	}
	if d := o.slows() - old.slows(); d != 0 {
		w.slow.Add(d)
	}
	return w.tally(0), true
}

func (w *countWindow) tally(int64) tally {
	return tally{calls: w.calls.Load(), failures: w.failures.Load(), slow: w.slow.Load()}
}

// timeWindow holds the outcomes of the last len(buckets)×width nanoseconds,
// by bucket of width nanoseconds. The oldest bucket leaves whole, so the
// window spans between len(buckets)−1 and len(buckets) widths.
type timeWindow struct {
	mu      sync.Mutex // guards the following fields
	width   int64
	buckets []timeBucket
	head    int64 // index (time/width) of the newest bucket
	total   tally
}

type timeBucket struct {
	index int64
	tally
}

func newTimeWindow(span int64, n int) *timeWindow {
	return &timeWindow{width: span / int64(n), buckets: make([]timeBucket, n)}
}

// advanceLocked drops the buckets that left the window by now.
func (w *timeWindow) advanceLocked(now int64) *timeBucket {
	idx := w.indexOf(now)
	n := int64(len(w.buckets))
	if idx > w.head {
		from := max(w.head+1, idx-n+1)
		for k := from; k <= idx; k++ {
			b := &w.buckets[mod(k, n)]
			w.total.calls -= b.calls
			w.total.failures -= b.failures
			w.total.slow -= b.slow
			*b = timeBucket{index: k}
		}
		w.head = idx
	}
	b := &w.buckets[mod(idx, n)]
	if b.index != idx { // a time before the head's bucket: count it in the head
		b = &w.buckets[mod(w.head, n)]
	}
	return b
}

// indexOf returns the index of the bucket holding t.
func (w *timeWindow) indexOf(t int64) int64 {
	if t < 0 {
		return (t - w.width + 1) / w.width
	}
	return t / w.width
}

func mod(a, n int64) int64 { return ((a % n) + n) % n }

func (w *timeWindow) record(o outcome, now int64) (tally, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.addLocked(now, 1, o.failures(), o.slows())
	return w.total, true
}

func (w *timeWindow) addLocked(now, calls, failures, slow int64) {
	b := w.advanceLocked(now)
	b.calls += calls
	b.failures += failures
	b.slow += slow
	w.total.calls += calls
	w.total.failures += failures
	w.total.slow += slow
}

func (w *timeWindow) tally(now int64) tally {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advanceLocked(now)
	return w.total
}

// takeBackLocked removes a call counted at, unless its bucket has left the
// window by now (and the call with it).
func (w *timeWindow) takeBackLocked(at, now int64) {
	w.advanceLocked(now)
	idx := w.indexOf(at)
	if b := &w.buckets[mod(idx, int64(len(w.buckets)))]; b.index == idx && b.calls > 0 {
		b.calls--
		w.total.calls--
	}
}
