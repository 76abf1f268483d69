package pool

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// cacheLine is the size padding keeps apart what different Ps write.
const cacheLine = 64

// shard is one stack of idle entries, guarded by its own mutex so that
// callers on different Ps do not contend on one lock. The entry given back
// last is taken first: a Take gets a warm object (a connection whose server
// process just ran), and objects beyond what the load needs stay at the
// bottom, where MaxIdle reclaims them. A shard grows as entries come to it
// and keeps its capacity, so a steady load pushes without allocating.
type shard[T any] struct {
	mu    sync.Mutex
	buf   []*entry[T]                  // bottom (given back longest ago) first
	takes uint64                       // entries popped by take; guarded by mu
	_     [cacheLine - 8 - 24 - 8]byte // keep neighbouring shards on other lines
}

// push adds e in the order of idleSince, which for a give-back is on top;
// an entry back from its test, idle for longer, goes below the fresher ones.
func (s *shard[T]) push(e *entry[T]) {
	s.mu.Lock()
	s.buf = append(s.buf, e)
	i := len(s.buf) - 1
	for i > 0 && s.buf[i-1].idleSince > e.idleSince {
		s.buf[i] = s.buf[i-1]
		i--
	}
	s.buf[i] = e
	s.mu.Unlock()
}

// pop removes and returns the entry given back last, or nil.
func (s *shard[T]) pop() *entry[T] {
	s.mu.Lock()
	e := s.popLocked()
	s.mu.Unlock()
	return e
}

// popLocked is pop with s.mu held.
func (s *shard[T]) popLocked() *entry[T] {
	n := len(s.buf)
	if n == 0 {
		return nil
	}
	e := s.buf[n-1]
	s.buf[n-1] = nil
	s.buf = s.buf[:n-1]
	return e
}

// drainInto moves every entry to dst, the one given back longest ago first.
func (s *shard[T]) drainInto(dst []*entry[T]) []*entry[T] {
	s.mu.Lock()
	dst = append(dst, s.buf...)
	clear(s.buf)
	s.buf = s.buf[:0]
	s.mu.Unlock()
	return dst
}

// counts returns the entries in the shard and how many take has popped.
func (s *shard[T]) counts() (n int, takes uint64) {
	s.mu.Lock()
	n, takes = len(s.buf), s.takes
	s.mu.Unlock()
	return n, takes
}

// hint is a shard index that stays with one P: hints live in a sync.Pool,
// whose per-P private slot hands a P back the hint it last put there.
type hint struct{ i int }

// numShards is the number of idle shards for a pool of maxObjects: a power
// of two, at least GOMAXPROCS, but no more than there can be objects.
func numShards(maxObjects int) int {
	n := runtime.GOMAXPROCS(0)
	n = min(n, maxObjects, 64)
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// idleSet is where idle entries live: per-P shards for the fast path and
// one FIFO queue channel that waiting callers block on.
type idleSet[T any] struct {
	shards []shard[T]
	mask   int
	hints  sync.Pool
	next   atomic.Int64 // hint numbering
}

func (s *idleSet[T]) init(maxObjects int) {
	n := numShards(maxObjects)
	s.shards = make([]shard[T], n)
	s.mask = n - 1
	s.hints.New = func() any { return &hint{i: int(s.next.Add(1) - 1)} }
}

// getHint returns the calling P's hint; give it back with putHint.
func (s *idleSet[T]) getHint() *hint { return s.hints.Get().(*hint) }

func (s *idleSet[T]) putHint(h *hint) { s.hints.Put(h) }

// take pops an entry for the P whose hint is h, from its shard first, and
// records in the entry the shard it came from (where it goes back); nil if
// every shard was empty when looked at. A P that finds its shard locked by
// another moves its hint on, so Ps that came to share a shard (sync.Pool may
// hand a hint to another P after a GC) drift apart again.
func (s *idleSet[T]) take(h *hint) *entry[T] {
	for k := range s.shards {
		i := (h.i + k) & s.mask
		sh := &s.shards[i]
		if !sh.mu.TryLock() {
			if k == 0 {
				h.i++
			}
			continue
		}
		e := sh.popCounted()
		sh.mu.Unlock()
		if e != nil {
			e.home = i
			return e
		}
	}
	for k := range s.shards { // every shard was busy or empty: look again, waiting for locks
		i := (h.i + k) & s.mask
		sh := &s.shards[i]
		sh.mu.Lock()
		e := sh.popCounted()
		sh.mu.Unlock()
		if e != nil {
			e.home = i
			return e
		}
	}
	return nil
}

// popCounted is popLocked counting a take: the fast path's count costs no
// atomic, the shard's lock being held anyway.
func (s *shard[T]) popCounted() *entry[T] {
	e := s.popLocked()
	if e != nil {
		s.takes++
	}
	return e
}

// counts returns the number of entries in the shards and how many take has
// popped from them.
func (s *idleSet[T]) counts() (n int, takes uint64) {
	for i := range s.shards {
		m, t := s.shards[i].counts()
		n += m
		takes += t
	}
	return n, takes
}

// bottom returns the entry given back longest ago and its idleSince (read
// under the lock: once the lock is released, a caller may take the entry
// and give it back), or nil.
func (s *shard[T]) bottom() (*entry[T], int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 {
		return nil, 0
	}
	return s.buf[0], s.buf[0].idleSince
}

// removeBottom removes e if it is still the entry given back longest ago,
// and reports whether it did.
func (s *shard[T]) removeBottom(e *entry[T]) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 || s.buf[0] != e {
		return false
	}
	copy(s.buf, s.buf[1:])
	s.buf[len(s.buf)-1] = nil
	s.buf = s.buf[:len(s.buf)-1]
	return true
}
