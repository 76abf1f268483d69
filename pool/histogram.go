package pool

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// waitBuckets is the number of buckets of the acquire-wait histogram: bucket
// i counts waits shorter than 1µs<<i; the last one counts everything longer.
const waitBuckets = 28 // up to 1µs<<26 ≈ 67 s

// waitStats counts the waits of the Takes of roughly one P (one per idle
// shard), so that Ps do not contend on the counters. Safe for concurrent use.
type waitStats struct {
	nanos      atomic.Uint64
	counts     [waitBuckets]atomic.Uint64
	queueTakes atomic.Uint64   // Takes served at once from queue
	_          [cacheLine]byte // keep neighbouring Ps' counters on other lines
}

func (w *waitStats) observe(d time.Duration) {
	d = max(d, 0)
	w.nanos.Add(uint64(d))
	w.counts[min(bits.Len64(uint64(d/time.Microsecond)), waitBuckets-1)].Add(1)
}

// waitSnapshot sums ws: how many Takes waited, how long in all, and their
// histogram.
func waitSnapshot(ws []waitStats) (waits uint64, total time.Duration, h Histogram) {
	h = Histogram{Bounds: make([]time.Duration, waitBuckets), Counts: make([]uint64, waitBuckets)}
	for i := range h.Bounds {
		h.Bounds[i] = time.Microsecond << i
		for j := range ws {
			h.Counts[i] += ws[j].counts[i].Load()
		}
		waits += h.Counts[i]
	}
	for j := range ws {
		total += time.Duration(ws[j].nanos.Load())
	}
	h.Bounds[waitBuckets-1] = 0 // unbounded
	return waits, total, h
}

// Histogram is a snapshot of how long Takes waited for an object. Counts[i]
// is the number of Takes that waited less than Bounds[i] (and at least
// Bounds[i-1]); the last bucket has Bound 0 and counts every longer wait.
// Takes served at once count in the first bucket.
type Histogram struct {
	Bounds []time.Duration
	Counts []uint64
}

// total is the number of Takes counted.
func (h Histogram) total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket that holds quantile q
// (0..1) of the counted Takes, and true. It returns 0 and false when nothing
// was counted, and the last bucket's lower bound ("at least d") and false
// when q falls in that last, unbounded bucket.
func (h Histogram) Quantile(q float64) (d time.Duration, ok bool) {
	total := h.total()
	if total == 0 {
		return 0, false
	}
	rank := uint64(max(q, 0) * float64(total))
	if rank >= total {
		rank = total - 1
	}
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen > rank {
			if h.Bounds[i] == 0 {
				break
			}
			return h.Bounds[i], true
		}
	}
	return h.lastLowerBound(), false
}

// lastLowerBound is the largest finite bound: the lower bound of the last,
// unbounded bucket.
func (h Histogram) lastLowerBound() time.Duration {
	var b time.Duration
	for _, x := range h.Bounds {
		b = max(b, x)
	}
	return b
}
