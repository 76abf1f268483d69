package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/puddle/v2"

	"github.com/respool/respool/pool"
)

const (
	// queueSize is respool's MaxQueueSize: more than the 64 goroutines of
	// the oversubscribed scenario, so that no Take is ever refused.
	queueSize = 1024
	// closeTimeout bounds respool's Close, so that a pool that cannot
	// finish closing fails the benchmark instead of hanging it.
	closeTimeout = 10 * time.Second
)

// object is what every pool hands out: a small struct its holder writes to.
// Under -race, a pool that hands one object to two callers at once shows up
// as a data race on work.
type object struct {
	id   int64
	work uint64
}

// benchPool is one pool implementation behind the interface every scenario
// is written against. The interface costs each pool the same dynamic calls
// per operation, so it shifts all of them alike.
type benchPool interface {
	// worker returns a caller of the pool, for use by one goroutine at a time.
	worker() worker
	// close closes the pool, waits until its objects are destroyed and
	// reports anything the pool counted as wrong meanwhile.
	close() error
}

// worker is one caller of a pool: it holds at most one object at a time.
type worker interface {
	// take takes an object from the pool and holds it.
	take(ctx context.Context) error
	// giveBack gives the held object back.
	giveBack() error
	// use does iters iterations of busy work with the held object.
	use(iters int)
}

// poolKind names a pool implementation and makes pools of it.
type poolKind struct {
	name string
	new  func(size int) (benchPool, error)
}

// poolKinds are the pools compared in every scenario.
var poolKinds = []poolKind{
	{"respool", func(size int) (benchPool, error) { return newRespool(size, false) }},
	{"keyed", func(size int) (benchPool, error) { return newKeyed(size, false) }},
	{"puddle", newPuddle},
	{"sql", newSQL},
	{"chan", newChan},
}

// respoolLeak is respool with its default leak tracking (a token of its own
// for each Take's Handle, watched by the garbage collector when its lease
// outlasts a collection), for information.
var respoolLeak = poolKind{"respool-leak", func(size int) (benchPool, error) { return newRespool(size, true) }}

// keyedLeak is keyed with its default leak tracking, for information.
var keyedLeak = poolKind{"keyed-leak", func(size int) (benchPool, error) { return newKeyed(size, true) }}

// withLeak is poolKinds, respoolLeak and keyedLeak.
var withLeak = append(slices.Clip(poolKinds), respoolLeak, keyedLeak)

// newObject returns a constructor of objects numbered from 1.
func newObject() func(context.Context) (*object, error) {
	var ids atomic.Int64
	return func(context.Context) (*object, error) { return &object{id: ids.Add(1)}, nil }
}

// ---- respool ----

type respoolPool struct{ p *pool.Pool[*object] }

func newRespool(size int, leakTracking bool) (benchPool, error) {
	p, err := pool.New[*object](
		pool.Factory[*object]{Create: newObject()},
		pool.Config{MaxObjects: size, MaxQueueSize: queueSize, LeakTrackingDisabled: !leakTracking},
	)
	if err != nil {
		return nil, err
	}
	return &respoolPool{p: p}, nil
}

func (r *respoolPool) worker() worker { return &respoolWorker{p: r.p} }

func (r *respoolPool) close() error {
	return closeChecked("respool", r.p.Close, func() pool.Stats { return r.p.Stats() })
}

// closeChecked closes a respool pool (bounded by closeTimeout), and fails
// if its stats then count what no scenario should cause: a caller refused,
// a creation failed, a leak, a wait cancelled.
func closeChecked(name string, close func(context.Context) error, stats func() pool.Stats) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := close(ctx); err != nil {
		return err
	}
	if s := stats(); s.QueueFull != 0 || s.CreateFailures != 0 || s.LeaksDetected != 0 || s.CancelledWaits != 0 {
		return fmt.Errorf("%s: unexpected counts: QueueFull %d, CreateFailures %d, LeaksDetected %d, CancelledWaits %d",
			name, s.QueueFull, s.CreateFailures, s.LeaksDetected, s.CancelledWaits)
	}
	return nil
}

type respoolWorker struct {
	p *pool.Pool[*object]
	h pool.Handle[*object]
}

func (w *respoolWorker) take(ctx context.Context) error {
	h, err := w.p.Take(ctx)
	w.h = h
	return err
}

func (w *respoolWorker) giveBack() error {
	err := w.h.GiveBack()
	w.h = pool.Handle[*object]{}
	return err
}

func (w *respoolWorker) use(iters int) { w.h.Value().work += spin(iters) }

// ---- respool's Keyed ----

// keyedKeys are the keys of the Keyed pool: its workers take from them in
// turn, so that the scenarios' objects are spread over both.
var keyedKeys = [...]string{"primary", "replica"}

// keyedPool is a pool.Keyed of two keys, each of which may use the whole
// budget of size objects. Take is Keyed.Take(ctx, key) with the worker's
// key: the map lookup by key is part of what is measured.
type keyedPool struct {
	k    *pool.Keyed[string, *object]
	next atomic.Int64 // the key of the next worker
}

func newKeyed(size int, leakTracking bool) (benchPool, error) {
	k, err := pool.NewKeyed(pool.KeyedConfig[string, *object]{MaxObjects: size, MaxQueueSize: queueSize, LeakTrackingDisabled: !leakTracking})
	if err != nil {
		return nil, err
	}
	f := pool.Factory[*object]{Create: newObject()}
	for _, key := range keyedKeys {
		if _, err := k.Add(key, f, pool.Config{}); err != nil {
			return nil, err
		}
	}
	return &keyedPool{k: k}, nil
}

func (r *keyedPool) worker() worker {
	return &keyedWorker{k: r.k, key: keyedKeys[int(r.next.Add(1)-1)%len(keyedKeys)]}
}

func (r *keyedPool) close() error {
	return closeChecked("keyed", r.k.Close, func() pool.Stats { return r.k.Stats().Stats })
}

type keyedWorker struct {
	k   *pool.Keyed[string, *object]
	key string
	h   pool.Handle[*object]
}

func (w *keyedWorker) take(ctx context.Context) error {
	h, err := w.k.Take(ctx, w.key)
	w.h = h
	return err
}

func (w *keyedWorker) giveBack() error {
	err := w.h.GiveBack()
	w.h = pool.Handle[*object]{}
	return err
}

func (w *keyedWorker) use(iters int) { w.h.Value().work += spin(iters) }

// ---- puddle ----

type puddlePool struct{ p *puddle.Pool[*object] }

func newPuddle(size int) (benchPool, error) {
	p, err := puddle.NewPool(&puddle.Config[*object]{
		Constructor: newObject(),
		Destructor:  func(*object) {}, // puddle calls it unconditionally
		MaxSize:     int32(size),
	})
	if err != nil {
		return nil, err
	}
	return &puddlePool{p: p}, nil
}

func (p *puddlePool) worker() worker { return &puddleWorker{p: p.p} }

func (p *puddlePool) close() error {
	p.p.Close() // blocks until every resource is back and destroyed
	return nil
}

type puddleWorker struct {
	p *puddle.Pool[*object]
	r *puddle.Resource[*object]
}

func (w *puddleWorker) take(ctx context.Context) error {
	r, err := w.p.Acquire(ctx)
	w.r = r
	return err
}

func (w *puddleWorker) giveBack() error {
	w.r.Release()
	w.r = nil
	return nil
}

func (w *puddleWorker) use(iters int) { w.r.Value().work += spin(iters) }

// ---- database/sql ----

// sqlPool is database/sql's connection pool over fakeConnector: Take is
// db.Conn, GiveBack is Conn.Close, which returns the connection to the pool.
type sqlPool struct{ db *sql.DB }

func newSQL(size int) (benchPool, error) {
	db := sql.OpenDB(fakeConnector{})
	db.SetMaxOpenConns(size)
	db.SetMaxIdleConns(size) // after SetMaxOpenConns, which may lower it
	return &sqlPool{db: db}, nil
}

func (p *sqlPool) worker() worker { return &sqlWorker{db: p.db} }

func (p *sqlPool) close() error {
	if n := p.db.Stats().InUse; n != 0 {
		return fmt.Errorf("sql: %d connections still in use", n)
	}
	return p.db.Close()
}

type sqlWorker struct {
	db   *sql.DB
	c    *sql.Conn
	sink uint64 // the driver connection is not reachable without Conn.Raw
}

func (w *sqlWorker) take(ctx context.Context) error {
	c, err := w.db.Conn(ctx)
	w.c = c
	return err
}

func (w *sqlWorker) giveBack() error {
	err := w.c.Close()
	w.c = nil
	return err
}

func (w *sqlWorker) use(iters int) { w.sink += spin(iters) }

// errFake is what the fake driver answers to anything but opening and
// closing a connection.
var errFake = errors.New("fake driver: not supported")

// fakeConnector is a driver.Connector whose connections do nothing.
type fakeConnector struct{}

func (fakeConnector) Connect(context.Context) (driver.Conn, error) { return &fakeConn{}, nil }
func (fakeConnector) Driver() driver.Driver                        { return fakeDriver{} }

// fakeDriver is the driver.Driver of fakeConnector.
type fakeDriver struct{}

func (fakeDriver) Open(string) (driver.Conn, error) { return &fakeConn{}, nil }

// fakeConn is a driver.Conn that can only be closed.
type fakeConn struct{}

func (*fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errFake }
func (*fakeConn) Close() error                        { return nil }
func (*fakeConn) Begin() (driver.Tx, error)           { return nil, errFake }

// ---- buffered channel ----

// chanPool is the simplest pool there is: a buffered channel filled with
// every object up front. Take receives and GiveBack sends; it ignores ctx,
// which is never cancelled here.
type chanPool struct {
	ch   chan *object
	size int
}

func newChan(size int) (benchPool, error) {
	ch := make(chan *object, size)
	mk := newObject()
	for range size {
		o, _ := mk(context.Background())
		ch <- o
	}
	return &chanPool{ch: ch, size: size}, nil
}

func (p *chanPool) worker() worker { return &chanWorker{ch: p.ch} }

func (p *chanPool) close() error {
	if n := len(p.ch); n != p.size {
		return fmt.Errorf("chan: %d of %d objects given back", n, p.size)
	}
	for range p.size {
		<-p.ch
	}
	return nil
}

type chanWorker struct {
	ch chan *object
	o  *object
}

func (w *chanWorker) take(context.Context) error {
	w.o = <-w.ch
	return nil
}

func (w *chanWorker) giveBack() error {
	w.ch <- w.o
	w.o = nil
	return nil
}

func (w *chanWorker) use(iters int) { w.o.work += spin(iters) }
