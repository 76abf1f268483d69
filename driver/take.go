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
// and another is taken, until the pool makes a new one. conn.ResetSession (database/sql reusing a shell) and
// Connector.Connect (database/sql wanting a new connection) both take here.
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
			return h, pc, nil
		}
		_ = c.pool.Discard(h)
	}
	return pool.Handle[driver.Conn]{}, nil, driver.ErrBadConn
}

// reset runs the real driver's ResetSession on pc, with ctx's values and
// bound, and at most the pool's TestTimeout: a reset that pings must not
// hang on a network that stopped. Like database/sql, it skips a connection
// just made. Unlike database/sql, which discards a connection only on
// driver.ErrBadConn and ignores other errors, any error keeps the connection
// from reuse: a session that could not be reset is not safe to hand out.
func (c *Connector) reset(ctx context.Context, pc *physConn) error {
	if !pc.used {
		pc.used = true
		return nil
	}
	sr, ok := pc.Conn.(driver.SessionResetter)
	if !ok {
		return nil
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return sr.ResetSession(ctx)
}

// bound returns ctx, ending at most the pool's TestTimeout from now.
func (c *Connector) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= c.testTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.testTimeout)
}
