package respool

import (
	"context"
	"crypto/tls"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pgQueryCanceled is PostgreSQL's SQLSTATE 57014 query_canceled.
const pgQueryCanceled = "57014"

// contextStopped returns err, the error of a call made with ctx, so that it
// also matches ctx's error when the server stopped the statement because
// ctx ended: with Config.CancelWait, respool asks PostgreSQL to cancel the
// statement of a context that ended (see cancelHandler), and pgx then
// returns the server's 57014 query_canceled, where the plain driver returns
// the context's error.
// Callers that test errors.Is(err, context.DeadlineExceeded) keep working;
// errors.As still finds the *pgconn.PgError.
func contextStopped(ctx context.Context, err error) error {
	ctxErr := ctx.Err()
	if ctxErr == nil || errors.Is(err, ctxErr) {
		return err
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgQueryCanceled {
		return err
	}
	return &stoppedError{ctxErr: ctxErr, err: err}
}

// stoppedError is a statement the server stopped after its context ended.
type stoppedError struct {
	ctxErr error // context.Canceled or context.DeadlineExceeded
	err    error // the real driver's
}

func (e *stoppedError) Error() string   { return e.ctxErr.Error() + ": " + e.err.Error() }
func (e *stoppedError) Unwrap() []error { return []error{e.ctxErr, e.err} }

// cancelHandler is the ctxwatch.Handler of respool's pgx connections (see
// Config.CancelWait). When the context of a call ends, it asks PostgreSQL
// to cancel the statement, with a cancel request on a connection of its
// own, and sets the connection's deadline wait ahead: the call then ends
// when the server has stopped the statement and the connection stays
// usable, or at the deadline, when pgx closes it. It is pgconn's
// CancelRequestContextWatcherHandler without its fixed 100ms pause after
// the cancel request, which would hold every cancelled call, and its
// connection, that long: the request has been answered when the call ends,
// and respool makes sure that a cancel that reaches the session late
// cannot stop another caller's statement (see absorbStrayCancel).
type cancelHandler struct {
	conn *pgconn.PgConn
	wire *wireConn // nil when respool did not dial the connection
	wait time.Duration
	done chan struct{} // closed when the last HandleCancel's request has ended
}

func newCancelHandler(c *pgconn.PgConn, wait time.Duration) *cancelHandler {
	h := &cancelHandler{conn: c, wait: wait}
	nc := c.Conn()
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	h.wire, _ = nc.(*wireConn)
	return h
}

func (h *cancelHandler) HandleCancel(context.Context) {
	deadline := time.Now().Add(h.wait)
	_ = h.conn.Conn().SetDeadline(deadline)
	if h.wire != nil {
		h.wire.cancelSent.Store(true)
	}
	done := make(chan struct{})
	h.done = done
	go func() {
		defer close(done)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		_ = h.conn.CancelRequest(ctx)
	}()
}

func (h *cancelHandler) HandleUnwatchAfterCancel() {
	<-h.done
	_ = h.conn.Conn().SetDeadline(time.Time{})
}

// absorbStrayCancel runs before a connection whose statement respool asked
// the server to cancel is handed out again, when the statement may have
// ended on its own before the cancel reached it: a cancel request that
// reaches the session late (one forwarded by a proxy, say) stops whatever
// runs then. A ping takes it: one that fails with 57014 query_canceled has
// absorbed it, and a second one must pass.
func absorbStrayCancel(ctx context.Context, c driver.Conn) error {
	p, ok := c.(driver.Pinger)
	if !ok {
		return nil
	}
	err := p.Ping(ctx)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgQueryCanceled {
		err = p.Ping(ctx)
	}
	return err
}
