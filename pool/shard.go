package pool

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

// cacheLine is the size padding keeps apart what different Ps write.
const cacheLine = 64

// shard is one FIFO list of idle entries, guarded by its own mutex so that
// callers on different Ps do not contend on one lock. Each shard can hold
// every entry (cap MaxObjects), so a push never fails.
type shard[T any] struct {
	mu   sync.Mutex
	head int // index of the oldest entry in buf
	n    int // entries in buf
	buf  []*entry[T]
	_    [cacheLine - 8 - 2*8 - 24]byte // keep neighbouring shards on other lines
}

func (s *shard[T]) push(e *entry[T]) {
	s.mu.Lock()
	i := s.head + s.n
	if i >= len(s.buf) {
		i -= len(s.buf)
	}
	s.buf[i] = e
	s.n++
	s.mu.Unlock()
}

// pop removes and returns the oldest entry, or nil.
func (s *shard[T]) pop() *entry[T] {
	s.mu.Lock()
	if s.n == 0 {
		s.mu.Unlock()
		return nil
	}
	e := s.buf[s.head]
	s.buf[s.head] = nil
	s.head++
	if s.head == len(s.buf) {
		s.head = 0
	}
	s.n--
	s.mu.Unlock()
	return e
}

func (s *shard[T]) len() int {
	s.mu.Lock()
	n := s.n
	s.mu.Unlock()
	return n
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
	for i := range s.shards {
		s.shards[i].buf = make([]*entry[T], maxObjects)
	}
	s.mask = n - 1
	s.hints.New = func() any { return &hint{i: int(s.next.Add(1) - 1)} }
}

// getHint returns the calling P's hint; give it back with putHint.
func (s *idleSet[T]) getHint() *hint { return s.hints.Get().(*hint) }

func (s *idleSet[T]) putHint(h *hint) { s.hints.Put(h) }

// popFrom takes the oldest entry of shard i, failing that of any other
// shard; nil if all were empty when looked at.
func (s *idleSet[T]) popFrom(i int) *entry[T] {
	for k := range s.shards {
		if e := s.shards[(i+k)&s.mask].pop(); e != nil {
			return e
		}
	}
	return nil
}

// count is the number of entries in the shards.
func (s *idleSet[T]) count() int {
	n := 0
	for i := range s.shards {
		n += s.shards[i].len()
	}
	return n
}
