package ratelimit

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// decision is an algorithm's answer, in nanoseconds on the state's time
// line, and permits.
type decision struct {
	ok        bool
	wait      int64 // ok: until the permits are the caller's (LeakyBucket)
	retryAt   int64 // !ok: when n permits could be had, if nobody else takes any
	remaining int64 // ok: permits left (the windows; buckets: bucketRemaining)
	never     bool  // !ok: n permits can never be had at once
	stale     bool  // nothing taken: the bucket was replaced, or must be rebased, first
}

// state is one key's state. The buckets use base and tat, lock free (see
// bucket.go); the windows use the fields under mu.
type state struct {
	// rule is the limit the state counts in. A Limiter's bucket never
	// changes it (the bucket is replaced); in a memoryStore the shard's
	// lock guards it; a Limiter's windows change it under mu.
	rule  rule
	owner *core        // in a memoryStore: the limiter that used it last (guarded by the shard's lock)
	base  int64        // the buckets: the time (ns) tat counts from
	tat   atomic.Int64 // the buckets: when the bucket is full again, in rule's units after base

	mu     sync.Mutex // guards the following fields
	window int64      // FixedWindow, SlidingWindow: index of the current window
	count  int64      // permits taken in the current window
	prev   int64      // SlidingWindow: permits taken in the window before
	log    []int64    // SlidingLog: times of the permits taken, oldest first
}

// newState returns a fresh state counting in r: a full bucket at t, or
// empty windows.
func newState(r *rule, t int64) *state { return &state{rule: *r, base: t} }

// take takes n permits at now if they can be had within maxWait (0: at
// once; only LeakyBucket schedules ahead). A bucket counts in its own rule;
// the windows move to l first.
func (s *state) take(l *rule, n, now, maxWait int64) decision {
	switch l.Algorithm {
	case TokenBucket, LeakyBucket:
		return s.takeBucket(n, now, maxWait)
	case FixedWindow:
		return s.takeFixed(l, n, now)
	case SlidingLog:
		return s.takeLog(l, n, now)
	default:
		return s.takeSliding(l, n, now)
	}
}

// adoptLocked makes l the windows' rule. The current window keeps its
// count; with another Period it lasts until the first of l's window
// boundaries after its start (its index in the old Period's windows would
// be another time in the new Period's).
func (s *state) adoptLocked(l *rule) {
	if s.rule.Limit == l.Limit {
		return
	}
	if s.rule.Period != l.Period {
		s.window = windowOf(s.window*int64(s.rule.Period), l)
	}
	s.rule = *l
}

// The windowed algorithms see times slightly out of order: callers read the
// clock before the lock, and a shared store hears several processes. A
// time earlier than the state's latest counts as that latest time, so
// that a straggler from the window before never resets the current one.

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
	s.adoptLocked(l)
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
	s.adoptLocked(l)
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
	s.adoptLocked(l)
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

// drain takes every permit available at now; false when nothing was
// done because the bucket was replaced, or must be rebased, first.
func (s *state) drain(l *rule, now int64) bool {
	if l.Algorithm.isBucket() {
		return s.drainBucket(now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.adoptLocked(l)
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
	return true
}

// fresh reports whether the state at now admits what a new key's would
// under its own rule, so that forgetting it lets nothing more through.
func (s *state) fresh(now int64) bool {
	if s.rule.Algorithm.isBucket() {
		return s.bucketFull(now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &s.rule
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
