package failover

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

const (
	writers       = 32
	writeDeadline = time.Second          // every write's deadline
	retryPause    = 5 * time.Millisecond // after a failed write: a client that fails fast does not spin the CPUs the servers and the other clients need
	finishBound   = 5 * time.Second      // for writers to return once told to stop
	warmBound     = 15 * time.Second     // for every writer's first success
)

// class is what kind of failure a write had.
type class int

const (
	classReadOnly class = iota // refused as read-only: 25006, 1290, 1792
	classConn                  // no connection: refused, broken, no read-write server, the pool's fail-fast
	classDeadline              // the write's deadline ended it
	classAuth                  // authentication refused: 28P01, 28000, 1045
	classOther
	nClasses
)

var classNames = [nClasses]string{"read-only", "connection", "deadline", "auth", "other"}

func (c class) String() string { return classNames[c] }

// classify returns the class of a write's error.
func classify(err error) class {
	var pgErr *pgconn.PgError
	var myErr *mysql.MySQLError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "25006",
		errors.As(err, &myErr) && (myErr.Number == 1290 || myErr.Number == 1792):
		return classReadOnly
	case errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"),
		errors.As(err, &myErr) && myErr.Number == 1045:
		return classAuth
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		return classDeadline
	case errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, resilience.ErrRejected), errors.Is(err, pool.ErrOverloaded):
		return classConn
	}
	var netErr *net.OpError
	var connectErr *pgconn.ConnectError
	if errors.As(err, &netErr) || errors.As(err, &connectErr) {
		return classConn
	}
	return classOther
}

// event is the times of a scenario's fault, shared by every client's load.
// Each is unix nanoseconds, 0 until set.
type event struct {
	fault   atomic.Int64 // failures are counted from then on
	recover atomic.Int64 // a write on the target server from then on is a recovery
	end     atomic.Int64 // writes that end after it are not counted
}

func (e *event) set(at *atomic.Int64) time.Time {
	now := time.Now()
	at.Store(now.UnixNano())
	return now
}

// load is writers goroutines writing through one client back to back,
// each write with writeDeadline.
type load struct {
	c       client
	w       writer
	ev      *event
	target  int // the port of the server a recovery must write on; 0: any
	stop    chan struct{}
	halting sync.Once // closes stop
	wg      sync.WaitGroup

	oks      atomic.Int64           // successful writes
	lastErr  atomic.Pointer[string] // the latest failure, for waitWarm's error
	warmLeft atomic.Int32
	warmed   chan struct{} // closed once every writer has succeeded once
	recLeft  atomic.Int32
	all      chan struct{} // closed once every writer has recovered

	mu           sync.Mutex       // guards the fields below
	fails        [nClasses]int    // since the fault
	sample       [nClasses]string // the first error of each class
	firstOK      []time.Time      // per writer: its first recovery
	roAfterFirst int              // read-only failures after the first recovery
	first        time.Time        // the first recovery of any writer
	byPort       map[int]int      // successes since the fault, by server port
	_            [0]func()        // not comparable
}

// startLoad starts writers on w; target is the port recoveries must
// write on (0: any).
func startLoad(c client, w writer, ev *event, target int) *load {
	l := &load{c: c, w: w, ev: ev, target: target, stop: make(chan struct{}),
		warmed: make(chan struct{}), all: make(chan struct{}), firstOK: make([]time.Time, writers),
		byPort: map[int]int{}}
	l.warmLeft.Store(writers)
	l.recLeft.Store(writers)
	for i := range writers {
		l.wg.Go(func() { l.writer(i) })
	}
	return l
}

func (l *load) writer(i int) {
	warm := false
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(suiteCtx, writeDeadline)
		port, err := l.w.write(ctx, l.c.name)
		cancel()
		end := time.Now()
		if err == nil {
			l.oks.Add(1)
		} else {
			msg := err.Error()
			l.lastErr.Store(&msg)
		}
		if err == nil && !warm {
			warm = true
			if l.warmLeft.Add(-1) == 0 {
				close(l.warmed)
			}
		}
		fault, over := l.ev.fault.Load(), l.ev.end.Load()
		if fault != 0 && end.UnixNano() >= fault && (over == 0 || end.UnixNano() <= over) {
			l.record(i, end, port, err)
		}
		if err != nil { // a writer's own pause before it tries again, as an application's retry loop has
			select {
			case <-l.stop:
				return
			case <-time.After(retryPause):
			}
		}
	}
}

// record counts a write that ended after the fault.
func (l *load) record(i int, end time.Time, port int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		c := classify(err)
		l.fails[c]++
		if l.sample[c] == "" {
			l.sample[c] = err.Error()
		}
		if c == classReadOnly && !l.first.IsZero() && end.After(l.first) {
			l.roAfterFirst++
		}
		return
	}
	l.byPort[port]++
	rec := l.ev.recover.Load()
	if rec == 0 || end.UnixNano() < rec || (l.target != 0 && port != l.target) || !l.firstOK[i].IsZero() {
		return
	}
	l.firstOK[i] = end
	if l.first.IsZero() {
		l.first = end
	}
	if l.recLeft.Add(-1) == 0 {
		close(l.all)
	}
}

// waitWarm waits until every writer has succeeded once, or until the
// deadline.
func (l *load) waitWarm(ctx context.Context, deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-l.warmed:
		return nil
	case <-t.C:
		return fmt.Errorf("%s: not every writer had succeeded by the deadline; the latest failure: %s", l.c, deref(l.lastErr.Load()))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// halt tells the writers to stop after their write.
func (l *load) halt() { l.halting.Do(func() { close(l.stop) }) }

// finish stops the writers and waits for them, at most finishBound.
func (l *load) finish() error {
	l.halt()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	t := time.NewTimer(finishBound)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return errors.New(l.c.name + ": writers did not return within " + finishBound.String())
	}
}

// recovered returns, after finish, the first recovery and the last
// writer's first recovery (zero when not every writer recovered).
func (l *load) recovered() (first, all time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.firstOK {
		if t.IsZero() {
			return l.first, time.Time{}
		}
		if t.After(all) {
			all = t
		}
	}
	return l.first, all
}

// waitAll waits until every load's writers have recovered or d has
// passed since from.
func waitAll(ctx context.Context, loads []*load, from time.Time, d time.Duration) {
	t := time.NewTimer(time.Until(from.Add(d)))
	defer t.Stop()
	for _, l := range loads {
		select {
		case <-l.all:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}
