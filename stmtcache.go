package respool

import (
	"context"
	"database/sql/driver"
	"sync"
	"sync/atomic"
)

// stmtCacheSize bounds the statements kept prepared on one physical
// connection. Past it, the statement used least recently is closed there.
const stmtCacheSize = 128

// stmtRegistry counts, per query, the statements database/sql holds open
// (one per *sql.Stmt and connection shell it was prepared on). A query whose
// count drops to zero is no longer wanted: each physical connection closes
// it the next time it is taken or tested (stmtCache.dropUnwanted), as the
// connection that prepares a statement is rarely the one in hand when its
// *sql.Stmt is closed.
type stmtRegistry struct {
	mu   sync.Mutex
	open map[string]int // open statements by query; guarded by mu
	// dropped counts queries that lost their last open statement, so that
	// a connection can tell whether it has anything to close.
	dropped atomic.Uint64
}

// opened counts one more open statement of query.
func (r *stmtRegistry) opened(query string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		r.open = make(map[string]int)
	}
	r.open[query]++
}

// closed counts one statement of query closed, and reports whether it was
// the last.
func (r *stmtRegistry) closed(query string) (last bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open[query]--; r.open[query] > 0 {
		return false
	}
	delete(r.open, query)
	r.dropped.Add(1)
	return true
}

// wanted reports whether query has open statements.
func (r *stmtRegistry) wanted(query string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open[query] > 0
}

// stmtCache is the statements prepared on one physical connection, by query,
// most recently used first. Only the holder of the connection touches it.
type stmtCache struct {
	byQuery    map[string]*cachedStmt
	head, tail *cachedStmt // most and least recently used
	dropped    uint64      // stmtRegistry.dropped when unwanted ones were last closed
}

type cachedStmt struct {
	query      string
	inner      driver.Stmt
	prev, next *cachedStmt
}

// get returns query's statement on the connection, preparing it with
// prepare on a miss, and closing the least recently used one if the cache
// is then full.
func (sc *stmtCache) get(ctx context.Context, query string, prepare func(context.Context, string) (driver.Stmt, error)) (driver.Stmt, error) {
	if e := sc.byQuery[query]; e != nil {
		sc.unlink(e)
		sc.pushFront(e)
		return e.inner, nil
	}
	inner, err := prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	if sc.byQuery == nil {
		sc.byQuery = make(map[string]*cachedStmt)
	}
	e := &cachedStmt{query: query, inner: inner}
	sc.byQuery[query] = e
	sc.pushFront(e)
	if len(sc.byQuery) > stmtCacheSize {
		sc.drop(sc.tail)
	}
	return inner, nil
}

// dropQuery closes query's statement, if the connection has it.
func (sc *stmtCache) dropQuery(query string) {
	if e := sc.byQuery[query]; e != nil {
		sc.drop(e)
	}
}

// dropUnwanted closes the statements whose queries have no open statement
// left, if any query lost its last one since it last looked.
func (sc *stmtCache) dropUnwanted(r *stmtRegistry) {
	dropped := r.dropped.Load()
	if dropped == sc.dropped {
		return
	}
	sc.dropped = dropped
	for e := sc.head; e != nil; {
		next := e.next
		if !r.wanted(e.query) {
			sc.drop(e)
		}
		e = next
	}
}

// drop closes e's statement and forgets it. The close error is dropped: the
// statement is gone from the cache either way, and a server frees a
// connection's statements when the connection closes.
func (sc *stmtCache) drop(e *cachedStmt) {
	sc.unlink(e)
	delete(sc.byQuery, e.query)
	_ = e.inner.Close()
}

func (sc *stmtCache) pushFront(e *cachedStmt) {
	e.prev, e.next = nil, sc.head
	if sc.head != nil {
		sc.head.prev = e
	}
	sc.head = e
	if sc.tail == nil {
		sc.tail = e
	}
}

func (sc *stmtCache) unlink(e *cachedStmt) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sc.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		sc.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
