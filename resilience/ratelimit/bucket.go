package ratelimit

import (
	"math"
	"math/bits"
)

// The buckets (TokenBucket, LeakyBucket) are a GCRA: the state is the time
// the bucket is full again (tat); taking n permits moves it n intervals
// later, and is allowed while it stays within Burst intervals of now.
//
// A permit's interval, Period/Permits, is seldom a whole number of
// nanoseconds (333⅓ns at 3,000,000/s), and truncating it lets more through
// than the limit (67% more at 600,000,000/s). So a bucket counts time in
// units of 1/scale ns, scale the denominator of Period/Permits in lowest
// terms, where the interval is a whole number, and tat is such a number of
// units after the state's base, a time in nanoseconds. The state stays one
// int64, updated by compare-and-swap. A limit whose depth Burst × interval
// would not fit maxDepth units, or whose denominator passes maxScale, gets
// a coarser unit and its interval rounded up: never more than the limit,
// and less by at most one unit an interval, a share of at most 2⁻³¹ or
// about Burst/2⁶⁰ (the unit is about τ/2⁶¹ ns, τ the depth in ns).

const (
	// maxTau bounds a bucket's depth, Burst × Period/Permits, in
	// nanoseconds (validate).
	maxTau = math.MaxInt64 / 8
	// maxDepth bounds it in units; a state's base is moved on (rebased)
	// before now passes it by more than the rest of int64 allows: now,
	// tat ≤ now + depth and next ≤ tat + depth all fit.
	maxDepth = math.MaxInt64 / 4
	// maxScale bounds the units: now may pass a state's base by 1s at
	// least before it is rebased.
	maxScale = 1 << 31
	// retired is the tat of a Limiter's bucket that was replaced (after
	// SetLimit, or to rebase it): a take that finds it starts again on the
	// new one.
	retired = math.MinInt64
)

// rule is a Limit with what every take needs computed once.
type rule struct {
	Limit

	// The buckets' units (see above); zero for the other algorithms.
	scale    int64 // units per nanosecond
	interval int64 // a permit's interval in units: Period × scale/Permits
	depth    int64 // Burst × interval: how far tat may run ahead of now
	span     int64 // ns: how far now may pass a state's base before it is rebased
}

// isBucket reports whether a counts with tat (a GCRA).
func (a Algorithm) isBucket() bool { return a == TokenBucket || a == LeakyBucket }

// compile computes l's rule; l is valid, with its defaults.
func compile(l Limit) rule {
	r := rule{Limit: l}
	if !l.Algorithm.isBucket() {
		return r
	}
	period, permits := uint64(l.Period), uint64(l.Permits)
	g := gcd(period, permits)
	if hi, lo := bits.Mul64(uint64(l.Burst), period/g); permits/g <= maxScale && hi == 0 && lo <= maxDepth {
		r.scale, r.interval = int64(permits/g), int64(period/g) // exact
	} else {
		// The finest unit in which Burst intervals, rounded up, fit
		// maxDepth: scale × τ + Burst ≤ maxDepth, τ = Burst × Period/Permits
		// (at most maxTau, so scale ≥ 1).
		tau := mulDivCeil(uint64(l.Burst), period, permits)
		scale := min(max((maxDepth-uint64(l.Burst))/tau, 1), maxScale)
		r.scale, r.interval = int64(scale), int64(mulDivCeil(period, scale, permits))
	}
	r.depth = l.Burst * r.interval
	r.span = (math.MaxInt64 - 3*maxDepth) / r.scale
	return r
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// mulDivCeil returns ⌈a×b/c⌉, which must fit in 64 bits.
func mulDivCeil(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, rem := bits.Div64(hi, lo, c)
	if rem != 0 {
		q++
	}
	return q
}

// ceilDiv returns ⌈a/b⌉ for b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b // rounded towards zero: up for a < 0
	if a > 0 && a%b != 0 {
		q++
	}
	return q
}

// nowUnits returns t in s's units, and false when s must be rebased first
// (t passed its base by more than span). A time before base by more than
// span (a clock far behind others sharing a store) counts as base − span.
func (s *state) nowUnits(t int64) (int64, bool) {
	d := t - s.base
	if d > s.rule.span {
		return 0, false
	}
	return max(d, -s.rule.span) * s.rule.scale, true
}

// takeBucket takes n permits at t (ns) in s's rule. For TokenBucket that is
// a token bucket of capacity Burst; for LeakyBucket the caller instead gets
// the slot max(now, tat), if it may wait for it (maxWait ns), and waits, so
// that permits leave evenly spaced.
func (s *state) takeBucket(n, t, maxWait int64) decision {
	r := &s.rule
	if n > r.Burst {
		return decision{never: true}
	}
	now, ok := s.nowUnits(t)
	if !ok {
		return decision{stale: true}
	}
	cost := n * r.interval
	for {
		tat := s.tat.Load()
		if tat == retired {
			return decision{stale: true}
		}
		start := max(tat, now)
		next := start + cost
		var wait int64
		if r.Algorithm == LeakyBucket {
			// The slot starts when the earlier permits have left.
			wait = ceilDiv(start-now, r.scale)
			if wait > maxWait || next-now > r.depth {
				return decision{retryAt: s.base + max(ceilDiv(next-r.depth, r.scale), ceilDiv(start, r.scale)-maxWait)}
			}
		} else if next-now > r.depth {
			return decision{retryAt: s.base + ceilDiv(next-r.depth, r.scale)}
		}
		if s.tat.CompareAndSwap(tat, next) {
			return decision{ok: true, wait: wait} // remaining: see bucketRemaining
		}
	}
}

// cancelBucketSlot gives back the n permits of the LeakyBucket slot that a
// take at t granted after a wait of wait ns, unless a later take was
// scheduled after it: their slots are set, and cannot move. The slot
// started within the nanosecond before t + wait; it is the last one if tat
// is its end. It reports false when s was replaced, or must be rebased.
func (s *state) cancelBucketSlot(n, t, wait int64) bool {
	now, ok := s.nowUnits(t)
	if !ok {
		return false
	}
	cost := n * s.rule.interval
	hi := now + wait*s.rule.scale + cost // the slot's end, at the latest
	for {
		tat := s.tat.Load()
		switch {
		case tat == retired:
			return false
		case tat <= hi-s.rule.scale || tat > hi:
			return true // a later slot was scheduled, or ours is gone
		case s.tat.CompareAndSwap(tat, tat-cost):
			return true
		}
	}
}

// drainBucket takes every permit there is at t; false as cancelBucketSlot.
func (s *state) drainBucket(t int64) bool {
	now, ok := s.nowUnits(t)
	if !ok {
		return false
	}
	full := now + s.rule.depth
	for {
		tat := s.tat.Load()
		switch {
		case tat == retired:
			return false
		case tat >= full || s.tat.CompareAndSwap(tat, full):
			return true
		}
	}
}

// bucketRemaining returns the permits left at t after a take at t: a
// memoryStore's Decision.Remaining (the Limiter's fast path needs none).
func (s *state) bucketRemaining(t int64) int64 {
	now, _ := s.nowUnits(t)
	return (s.rule.depth - (max(s.tat.Load(), now) - now)) / s.rule.interval
}

// bucketFull reports whether the bucket is full at t: tat ≤ t.
func (s *state) bucketFull(t int64) bool {
	return s.base+ceilDiv(s.tat.Load(), s.rule.scale) <= t
}

// debtAt returns, in units of from, how far a bucket whose tat is tat
// units after base runs ahead of at: the permits taken and not yet back,
// at most from's Burst.
func debtAt(from *rule, base, tat, at int64) int64 {
	if !from.Algorithm.isBucket() || base+ceilDiv(tat, from.scale) <= at {
		return 0
	}
	// tat is past at, so (at − base) × scale fits, unless at is far before
	// base (then the debt is capped).
	d := at - base
	if d < -from.span {
		return from.depth
	}
	return min(tat-d*from.scale, from.depth)
}

// convertDebt returns debt, in units of from, in units of to: the permits
// taken and not yet back stay taken, and come back at to's rate; at most
// to's Burst of them (a bucket owes no more than it holds). Rounded up.
func convertDebt(from, to *rule, debt int64) int64 {
	switch {
	case debt <= 0:
		return 0
	case from.scale == to.scale && from.interval == to.interval:
		return min(debt, to.depth)
	}
	// debt ≥ to.Burst × from.interval: Burst permits or more.
	if hi, lo := bits.Mul64(uint64(to.Burst), uint64(from.interval)); hi == 0 && uint64(debt) >= lo {
		return to.depth
	}
	// Less than to.depth, so the quotient fits.
	return int64(mulDivCeil(uint64(debt), uint64(to.interval), uint64(from.interval)))
}

// rebucket sets s, a bucket in a memoryStore, to count in r from at on:
// its base moves to at, and its debt converts to r's units.
func (s *state) rebucket(r *rule, at int64) {
	debt := convertDebt(&s.rule, r, debtAt(&s.rule, s.base, s.tat.Load(), at))
	s.rule, s.base = *r, at
	s.tat.Store(debt)
}
