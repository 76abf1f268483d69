package pool

import (
	"sync/atomic"
	"time"
)

// waitBuckets is the number of buckets of the acquire-wait histogram: bucket
// i counts waits shorter than 1µs<<i; the last one counts everything longer.
const waitBuckets = 28 // up to 1µs<<26 ≈ 67 s

// waitHistogram counts how long Takes waited. Safe for concurrent use.
type waitHistogram struct {
	counts [waitBuckets]atomic.Uint64
}

func (h *waitHistogram) observe(d time.Duration) {
	i := 0
	for limit := time.Microsecond; i < waitBuckets-1 && d >= limit; limit <<= 1 {
		i++
	}
	h.counts[i].Add(1)
}

func (h *waitHistogram) snapshot(immediate uint64) Histogram {
	out := Histogram{Bounds: make([]time.Duration, waitBuckets), Counts: make([]uint64, waitBuckets)}
	for i := range out.Bounds {
		out.Bounds[i] = time.Microsecond << i
		out.Counts[i] = h.counts[i].Load()
	}
	out.Bounds[waitBuckets-1] = 0 // unbounded
	out.Counts[0] += immediate
	return out
}

// Histogram is a snapshot of how long Takes waited for an object. Counts[i]
// is the number of Takes that waited less than Bounds[i] (and at least
// Bounds[i-1]); the last bucket has Bound 0 and counts every longer wait.
// Takes served at once count in the first bucket.
type Histogram struct {
	Bounds []time.Duration
	Counts []uint64
}

// Total is the number of Takes counted.
func (h Histogram) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket holding quantile q (0..1),
// or -1 for the unbounded last bucket, or 0 when nothing was counted.
func (h Histogram) Quantile(q float64) time.Duration {
	total := h.Total()
	if total == 0 {
		return 0
	}
	rank := uint64(q * float64(total))
	if rank >= total {
		rank = total - 1
	}
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen > rank {
			if h.Bounds[i] == 0 {
				return -1
			}
			return h.Bounds[i]
		}
	}
	return -1
}
