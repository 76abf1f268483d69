package respool

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
)

// physConn is one physical connection: the real driver's connection and
// respool's state of it. It is the object respool's pool holds, so its state
// lives and dies with the connection. Its fields are touched only by whoever
// holds it: the pool while it idles, one conn while it is attached to it.
type physConn struct {
	driver.Conn // the real driver's connection

	stmts stmtCache // statements prepared on the connection

	// shell is the conn the connection is attached to, if any: read by
	// Destroy, which the pool may call from another goroutine when it
	// reclaims the connection as leaked (see conn.reclaim).
	shell atomic.Pointer[conn]

	// wire is the connection's socket when respool dialed it (pgx and
	// go-sql-driver/mysql from a DSN; see wireConn); nil otherwise.
	wire *wireConn

	gen    uint64 // the serverRole generation the connection was made in
	served bool   // it was taken from idle, or a statement ran on it (see conn.leaveReadOnly)
}

// physFactory is the pool's factory: connFactory's life cycle applied to
// the real connection inside each physConn, with the hooks that make a
// connection taken from idle ready for reuse (see poolFactory).
type physFactory struct {
	real  connFactory
	stmts *stmtRegistry  // the Connector's
	hooks *connHooks     // the Config's
	guard *dbguard.Guard // the Connector's: the creation path
	// attempts is the Connector's connection attempts under way (nil: not
	// tracked).
	attempts *attemptSet
	role     *serverRole    // the Connector's; nil for a pool for reads
	watch    *primaryWatch  // the Connector's; nil but for several hosts for writes
	pooler   *poolerWarning // nil with Config.PgBouncer set
}

// create makes a connection through guarded, the guard's creation path
// (retry, breaker, pause, connect-rate limiter: see dbguard.Factory) around
// dial, with a dialLog in its context for respool's dial function (see
// wireDial) to record the attempt's sockets and phase, and adopts the socket
// of the connection made. An attempt given up on by a deadline or a timeout
// fails with a *ConnectPhaseError naming its address and phase.
func (f physFactory) create(ctx context.Context, guarded func(context.Context) (driver.Conn, error)) (driver.Conn, error) {
	ctx, dials := withDialLog(ctx)
	f.attempts.track(dials)
	var gen uint64
	if f.role != nil {
		gen = f.role.gen.Load() // before the dial: a refusal during it makes the connection old (the pool destroys it: see serverRole)
	}
	c, err := guarded(ctx)
	f.attempts.end(dials)
	if err != nil {
		return nil, err
	}
	if f.role != nil {
		f.role.made(gen)
	}
	f.pooler.check(c)
	return &physConn{Conn: c, wire: dials.adopt(), gen: gen}, nil
}

// dial is one attempt of the real driver; its failure is told to the
// attempts under way with the attempt's dialLog (see create).
//
// With several hosts for writes, the watch of the hosts (primaryWatch)
// refuses the attempt while none takes writes, names the one that does to
// dial first, and starts on a failure.
func (f physFactory) dial(ctx context.Context) (driver.Conn, error) {
	if f.watch != nil {
		if c := f.watch.takeParked(ctx); c != nil {
			f.watch.succeeded()
			return c, nil
		}
		if err := f.watch.admit(); err != nil {
			return nil, err
		}
		ctx = f.watch.prefer(ctx)
	}
	c, err := f.real.create(ctx)
	if err != nil {
		if f.watch != nil && ctx.Err() == nil {
			f.watch.failed()
		}
		dials, _ := ctx.Value(dialLogKey{}).(*dialLog)
		return nil, f.attempts.failed(dials, err)
	}
	if f.watch != nil {
		f.watch.succeeded()
	}
	return c, nil
}

func (f physFactory) Validate(c driver.Conn) error { return f.real.validate(c.(*physConn).Conn) }

// Test tests an idle connection, after closing the statements no longer
// wanted on it (see stmtRegistry).
func (f physFactory) Test(ctx context.Context, c driver.Conn) error {
	pc := c.(*physConn)
	pc.stmts.dropUnwanted(f.stmts)
	return f.real.test(ctx, pc.Conn)
}

// Destroy closes the real connection, then, for a connection respool
// dialed, waits until the server has ended the session (wireConn
// .awaitSessionEnd, bounded by Config.SessionEndWait): the pool frees the
// connection's slot when Destroy returns, so that a session the server
// still runs (a cancelled statement go-sql-driver/mysql walked away from)
// counts against the pool's maximum until it ends.
//
// A go-sql-driver/mysql connection that closed its socket without saying
// goodbye is closed (see closedAnyway).
//
// A connection still attached to a conn is one the pool reclaims as leaked
// (its Handle was lost with the rows that held it; a conn gives a connection
// back before it detaches): the conn is told, and the connection closed
// under its lock.
func (f physFactory) Destroy(c driver.Conn) error {
	pc := c.(*physConn)
	closeConn := func() error { return closedAnyway(f.real.destroy(pc.Conn)) }
	var err error
	if shell := pc.shell.Load(); shell != nil {
		err = shell.reclaim(pc, closeConn)
	} else {
		err = closeConn()
	}
	pc.wire.awaitSessionEnd()
	return err
}

// closedAnyway returns the error of a real connection's Close, nil for
// one that closed the connection all the same: go-sql-driver/mysql's Close
// of a connection whose rows were never read (one the pool reclaims as
// leaked) cannot send COM_QUIT (mysql.ErrBusyBuffer) but closes the socket.
func closedAnyway(err error) error {
	if errors.Is(err, mysql.ErrBusyBuffer) {
		return nil
	}
	return err
}

// poolFactory is the pool.Factory of f's methods. It makes the pool check
// each connection it takes from idle (see beforeHandOut), and run the
// Config's hooks: InitSQL and AfterConnect after a creation, AfterRelease
// after a give-back. A hook the Config lacks is nil, which costs the pool
// nothing.
func (f physFactory) poolFactory() pool.Factory[driver.Conn] {
	guarded := dbguard.Factory(f.guard, pool.Factory[driver.Conn]{Create: f.dial}).Create // once per Connector
	h := pool.Factory[driver.Conn]{Create: func(ctx context.Context) (driver.Conn, error) { return f.create(ctx, guarded) },
		Validate: f.Validate, Test: f.Test, Destroy: f.Destroy,
		BeforeHandOut: f.beforeHandOut}
	if len(f.hooks.initSQL) > 0 || f.hooks.afterConnect != nil {
		h.AfterCreate = func(ctx context.Context, c driver.Conn) error {
			return f.hooks.afterCreate(ctx, c.(*physConn).Conn)
		}
	}
	if f.hooks.afterRelease != nil {
		h.AfterGiveBack = func(ctx context.Context, c driver.Conn) error {
			return f.hooks.refused("AfterRelease", f.hooks.afterRelease(ctx, c.(*physConn).Conn))
		}
	}
	return h
}

// beforeHandOut makes a connection taken from idle ready for reuse, in the
// caller's goroutine, with the caller's context bounded by the pool's
// TestTimeout: the real driver's ResetSession checks it (pgx pings one that
// idled and refuses one left inside a transaction; go-sql-driver/mysql
// notices one the server closed), then a connection respool asked the
// server to cancel a statement on is pinged (absorbStrayCancel), then the
// statements no longer wanted on it are closed (stmtRegistry), then the
// Config's BeforeAcquire checks it. A
// connection refused is destroyed and the pool looks for another; a
// connection just made for the caller is not checked, as database/sql
// resets only connections it reuses. Unlike database/sql, which discards a
// connection only on driver.ErrBadConn, any error refuses it: a session
// that could not be reset is not safe to hand out.
func (f physFactory) beforeHandOut(ctx context.Context, c driver.Conn) error {
	pc := c.(*physConn)
	pc.served = true
	if err := resetSession(ctx, pc.Conn); err != nil {
		return err
	}
	if pc.wire != nil && pc.wire.cancelSent.Swap(false) {
		if err := absorbStrayCancel(ctx, pc.Conn); err != nil {
			return err
		}
	}
	pc.stmts.dropUnwanted(f.stmts)
	if f.hooks.beforeAcquire != nil {
		return f.hooks.refused("BeforeAcquire", f.hooks.beforeAcquire(ctx, pc.Conn))
	}
	return nil
}
