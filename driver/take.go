package driver

import (
	"context"
	"database/sql/driver"
	"time"

	"github.com/respool/respool/pool"
)

// take takes a connection from the pool for a caller, bounded by ctx, and
// makes it ready for reuse: the real driver's ResetSession checks a
// connection that was used before (pgx pings one that idled, go-sql-driver
// checks that the server has not closed it, pgx refuses one left inside a
// transaction). A connection it refuses is discarded, which frees its slot,
// and another is taken, until the pool makes a new one. On the connection it
// returns, statements no longer wanted have been closed (stmtRegistry).
// conn.ResetSession (database/sql reusing a shell) and Connector.Connect
// (database/sql wanting a new connection) both take here.
//
// Its error is the pool's (ctx's error, pool.ErrQueueFull, pool.ErrClosed,
// a *pool.CreateError), or driver.ErrBadConn when every connection it took
// was dead.
func (c *Connector) take(ctx context.Context) (pool.Handle[driver.Conn], *physConn, error) {
	// Once the pool's idle connections are discarded, the next take makes a
	// new connection, which needs no reset: the loop ends by itself.
	// Bounding it anyway guards against a server that keeps accepting
	// connections it then reports dead.
	for range c.maxObjects + 1 {
		h, err := c.pool.Take(ctx)
		if err != nil {
			return h, nil, err
		}
		pc := h.Value().(*physConn)
		if c.reset(ctx, pc) == nil {
			pc.stmts.dropUnwanted(&c.stmts)
			return h, pc, nil
		}
		_ = c.pool.Discard(h)
	}
	return pool.Handle[driver.Conn]{}, nil, driver.ErrBadConn
}

// reset runs the real driver's ResetSession on pc, with ctx's values and
// bound, or at most the pool's TestTimeout when ctx cannot end (see bound):
// a reset that pings must not hang on a network that stopped. Like
// database/sql, it skips a connection just made. Unlike database/sql, which
// discards a connection only on driver.ErrBadConn and ignores other errors,
// any error keeps the connection from reuse: a session that could not be
// reset is not safe to hand out.
func (c *Connector) reset(ctx context.Context, pc *physConn) error {
	if !pc.used {
		pc.used = true
		return nil
	}
	sr, ok := pc.Conn.(driver.SessionResetter)
	if !ok {
		return nil
	}
	return sr.ResetSession(c.bound(ctx))
}

// bound returns ctx for a reset, with at most the pool's TestTimeout left
// when ctx cannot end by itself. A context that can end (a deadline, a
// cancel) is the caller's bound and used as it is: "a caller's call returns
// within its own deadline". One that cannot (context.Background, or values
// on it) gets the deadline of a context shared by such takes and renewed
// every half TestTimeout, so that a take allocates no timer.
func (c *Connector) bound(ctx context.Context) context.Context {
	if ctx.Done() != nil {
		return ctx
	}
	shared := c.sharedBound()
	if ctx == context.Background() || ctx == context.TODO() {
		return shared
	}
	return boundValues{Context: shared, values: ctx}
}

// sharedBound returns a context that ends between half a TestTimeout and a
// TestTimeout from now.
func (c *Connector) sharedBound() context.Context {
	now := time.Since(monoEpoch) // the monotonic clock alone: cheaper than time.Now
	if b := c.resetBound.Load(); b != nil && now < b.renewAt {
		return b.ctx
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.testTimeout)
	// The one it replaces may be in use: it ends by its deadline.
	c.resetBound.Store(&sharedBound{ctx: ctx, cancel: cancel, renewAt: now + c.testTimeout/2})
	return ctx
}

// monoEpoch is the reference of sharedBound's clock readings.
var monoEpoch = time.Now()

// sharedBound is a deadline shared by resets whose callers' contexts cannot
// end (see Connector.bound).
type sharedBound struct {
	ctx     context.Context
	cancel  context.CancelFunc // called by Connector.Close; otherwise the deadline ends it
	renewAt time.Duration      // since monoEpoch
}

// boundValues is a context's values with a shared bound's deadline.
type boundValues struct {
	context.Context                 // the shared bound: Deadline, Done, Err
	values          context.Context // the caller's, which cannot end
}

func (b boundValues) Value(key any) any { return b.values.Value(key) }
