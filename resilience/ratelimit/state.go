package ratelimit

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// decision is an algorithm's answer, in nanoseconds on the state's own
// time line.
type decision struct {
	ok        bool
	wait      int64 // ok: until the permits are the caller's (LeakyBucket)
	retryAt   int64 // !ok: when n permits could be had, if nobody else takes any
	remaining int64 // ok: permits left (GCRA: nanoseconds of slack left)
	gcra      bool  // remaining is in nanoseconds
	never     bool  // !ok: n permits can never be had at once
}

// rule is a Limit with what every take needs computed once.
type rule struct {
	Limit
	interval int64 // the time one permit takes to come back, at least 1ns
}

func compile(l Limit) rule { return rule{Limit: l, interval: max(int64(l.Period)/l.Permits, 1)} }

// state is one key's state in memory. TokenBucket and LeakyBucket use tat
// alone, lock free; the other algorithms use the fields under mu.
type state struct {
	// rule is the limit a MemoryStore's key was last taken under, by which
	// the store's clean-up judges it (guarded by the shard's lock).
	rule rule
	tat  atomic.Int64 // theoretical arrival time: when the bucket is full again

	mu     sync.Mutex // guards the following fields
	window int64      // FixedWindow, SlidingWindow: index of the current window
	count  int64      // permits taken in the current window
	prev   int64      // SlidingWindow: permits taken in the window before
	log    []int64    // SlidingLog: times of the permits taken, oldest first
}

// take takes n permits at now if they can be had within maxWait (0: at
// once; only LeakyBucket schedules ahead).
func (s *state) take(l *rule, n, now, maxWait int64) decision {
	switch l.Algorithm {
	case TokenBucket:
		return s.takeGCRA(l, n, now, 0)
	case LeakyBucket:
		return s.takeGCRA(l, n, now, maxWait)
	case FixedWindow:
		return s.takeFixed(l, n, now)
	case SlidingLog:
		return s.takeLog(l, n, now)
	default:
		return s.takeSliding(l, n, now)
	}
}

// takeGCRA is the generic cell rate algorithm: the state is the time the
// bucket would be full again (tat); taking n permits moves it n intervals
// later, and is allowed while it stays within Burst intervals of now. For
// TokenBucket that is a token bucket of capacity Burst; for LeakyBucket the
// caller instead gets the slot max(now, tat) and waits for it, so permits
// leave evenly spaced.
func (s *state) takeGCRA(l *rule, n, now, maxWait int64) decision {
	e := l.interval
	tau := l.Burst * e // how far ahead of now tat may run
	if n > l.Burst {
		return decision{never: true}
	}
	for {
		tat := s.tat.Load()
		start := max(tat, now)
		next := start + n*e
		if l.Algorithm == LeakyBucket {
			// The slot starts when the earlier permits have left.
			wait := start - now
			if wait > maxWait || next-now > tau {
				return decision{retryAt: max(next-tau, start-maxWait)}
			}
			if s.tat.CompareAndSwap(tat, next) {
				return decision{ok: true, wait: wait, remaining: tau - (next - now), gcra: true}
			}
			continue
		}
		if next-now > tau {
			return decision{retryAt: next - tau}
		}
		if s.tat.CompareAndSwap(tat, next) {
			return decision{ok: true, remaining: tau - (next - now), gcra: true}
		}
	}
}

// The windowed algorithms see times slightly out of order: callers read the
// clock before the lock, and a shared store hears several processes. A
// time earlier than the state's latest counts as that latest time, so
// that a straggler from the window before never resets the current one.

// cancelSlot gives back the n permits of the LeakyBucket slot that a take
// at now granted after a wait, unless a later take was scheduled after it:
// their slots are set, and cannot move.
func (s *state) cancelSlot(l *rule, n, now, wait int64) {
	next := now + wait + n*l.interval
	s.tat.CompareAndSwap(next, next-n*l.interval)
}

// windowOf returns the index of the window holding now.
func windowOf(now int64, l *rule) int64 {
	p := int64(l.Period)
	if now < 0 {
		return (now - p + 1) / p
	}
	return now / p
}

func (s *state) takeFixed(l *rule, n, now int64) decision {
	if n > l.Permits {
		return decision{never: true}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := windowOf(now, l)
	if w > s.window {
		s.window, s.count = w, 0
	}
	w = s.window
	if s.count+n > l.Permits {
		return decision{retryAt: (w + 1) * int64(l.Period)}
	}
	s.count += n
	return decision{ok: true, remaining: l.Permits - s.count}
}

// takeLog keeps the time of every permit taken in the last Period.
func (s *state) takeLog(l *rule, n, now int64) decision {
	if n > l.Permits {
		return decision{never: true}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now = s.expireLocked(l, now)
	if int64(len(s.log))+n > l.Permits {
		// The permits come back when enough of the oldest expire.
		oldest := s.log[int64(len(s.log))+n-l.Permits-1]
		return decision{retryAt: oldest + int64(l.Period)}
	}
	for range n {
		s.log = append(s.log, now)
	}
	return decision{ok: true, remaining: l.Permits - int64(len(s.log))}
}

// expireLocked drops the permits taken at or before now−Period, and
// returns now, or the log's latest time if that is later.
func (s *state) expireLocked(l *rule, now int64) int64 {
	if len(s.log) > 0 {
		now = max(now, s.log[len(s.log)-1])
	}
	i := 0
	for i < len(s.log) && s.log[i] <= now-int64(l.Period) {
		i++
	}
	if i > 0 {
		s.log = append(s.log[:0], s.log[i:]...)
	}
	return now
}

// takeSliding estimates the permits of the last Period as the current
// window's count plus the previous window's, weighted by the share of the
// previous window the sliding window still covers. It counts in exact
// integers: prev×(P−e) + (count+n)×P ≤ Permits×P, e the time into the
// current window, in 128 bits.
func (s *state) takeSliding(l *rule, n, now int64) decision {
	if n > l.Permits {
		return decision{never: true}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now = s.slideLocked(l, now)
	p := uint64(l.Period)
	start := s.window * int64(l.Period)
	e := uint64(now - start)
	hi1, lo1 := bits.Mul64(uint64(s.prev), p-e)
	hi2, lo2 := bits.Mul64(uint64(s.count+n), p)
	lo, carry := bits.Add64(lo1, lo2, 0)
	hi, _ := bits.Add64(hi1, hi2, carry)
	limHi, limLo := bits.Mul64(uint64(l.Permits), p)
	if hi < limHi || (hi == limHi && lo <= limLo) {
		s.count += n
		est := float64(s.prev)*float64(p-e)/float64(p) + float64(s.count)
		return decision{ok: true, remaining: int64(float64(l.Permits) - est)}
	}
	// When would the estimate leave room for n? Within this window if the
	// current count leaves room once the previous window's weight fades
	// (prev×(P−e) ≤ room×P); else in the next, once this window's count
	// has faded enough (count×(P−e) ≤ (Permits−n)×P).
	if room := l.Permits - s.count - n; room >= 0 {
		return decision{retryAt: start + int64(p-fracFloor(uint64(room), p, uint64(s.prev)))}
	}
	return decision{retryAt: start + int64(p) + int64(p-fracFloor(uint64(l.Permits-n), p, uint64(s.count)))}
}

// fracFloor returns ⌊a×b/c⌋ for a < c.
func fracFloor(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// slideLocked moves the windows to now's, and returns now, or the current
// window's start if that is later.
func (s *state) slideLocked(l *rule, now int64) int64 {
	w := windowOf(now, l)
	switch {
	case w < s.window:
		return s.window * int64(l.Period)
	case w == s.window:
	case w == s.window+1:
		s.window, s.prev, s.count = w, s.count, 0
	default:
		s.window, s.prev, s.count = w, 0, 0
	}
	return now
}

// drain takes every permit available at now.
func (s *state) drain(l *rule, now int64) {
	switch l.Algorithm {
	case TokenBucket, LeakyBucket:
		full := now + l.Burst*l.interval
		for {
			tat := s.tat.Load()
			if tat >= full || s.tat.CompareAndSwap(tat, full) {
				return
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch l.Algorithm {
	case FixedWindow:
		s.window, s.count = max(windowOf(now, l), s.window), l.Permits
	case SlidingWindow:
		s.slideLocked(l, now)
		s.count = max(s.count, l.Permits)
	case SlidingLog:
		now = s.expireLocked(l, now)
		for int64(len(s.log)) < l.Permits {
			s.log = append(s.log, now)
		}
	}
}

// fresh reports whether the state at now admits what a new key's would
// under its own rule, so that forgetting it lets nothing more through.
func (s *state) fresh(now int64) bool {
	l := &s.rule
	switch l.Algorithm {
	case TokenBucket, LeakyBucket:
		return s.tat.Load() <= now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch l.Algorithm {
	case FixedWindow:
		return s.count == 0 || windowOf(now, l) > s.window
	case SlidingWindow:
		s.slideLocked(l, now)
		return s.count == 0 && s.prev == 0
	default:
		s.expireLocked(l, now)
		return len(s.log) == 0
	}
}
