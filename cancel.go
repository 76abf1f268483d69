package respool

import (
	"context"
	"crypto/tls"
	"database/sql/driver"
	"errors"
	"net"
	"os"
	"sync/atomic"
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
// Callers that test errors.Is(err, context.DeadlineExceeded) and
// pgconn.Timeout(err) keep working; errors.As still finds the
// *pgconn.PgError.
func contextStopped(ctx context.Context, err error) error {
	ctxErr := ctx.Err()
	if ctxErr == nil || errors.Is(err, ctxErr) {
		return err
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgQueryCanceled {
		return err
	}
	return newStopped(ctxErr, err, true)
}

// stoppedError is a statement the server stopped after its context ended.
type stoppedError struct {
	ctxErr error // context.Canceled or context.DeadlineExceeded
	err    error // the real driver's
	// timeout is pgconn's error for a deadline that ended a pgx call
	// (pgTimeout), so that pgconn.Timeout reports true, as it does for
	// the plain driver's error; nil for a cancelled context, for
	// go-sql-driver/mysql, and when pgTimeout has none.
	timeout error
}

// newStopped returns the error of a statement stopped after its context
// ended with ctxErr; pgx tells a statement of pgx's driver.
func newStopped(ctxErr, err error, pgx bool) *stoppedError {
	e := &stoppedError{ctxErr: ctxErr, err: err}
	if pgx && ctxErr == context.DeadlineExceeded {
		e.timeout, _ = pgTimeout.Load().(error)
	}
	return e
}

// Error reads as the plain driver's error (pgx's "timeout: context
// deadline exceeded", or the context's error), then the real driver's.
func (e *stoppedError) Error() string {
	if e.timeout != nil {
		return e.timeout.Error() + ": " + e.err.Error()
	}
	return e.ctxErr.Error() + ": " + e.err.Error()
}

func (e *stoppedError) Unwrap() []error {
	if e.timeout != nil {
		return []error{e.ctxErr, e.err, e.timeout}
	}
	return []error{e.ctxErr, e.err}
}

// pgTimeout holds pgconn's error for a call its context's deadline ended,
// "timeout: context deadline exceeded": the error pgx's driver returns for
// such a statement, the one pgconn.Timeout reports true for. Its type is
// unexported, so respool takes one from pgconn, once, when it makes its
// first pgx connector (see setPgTimeout); until then it holds nothing.
var pgTimeout atomic.Value // error

// setPgTimeout fills pgTimeout, once, from a connection attempt with a
// copy of cfg that reaches no network: its dial fails at once with an I/O
// timeout, under a context whose deadline has passed, which pgconn reports
// with its timeout error.
func setPgTimeout(cfg *pgconn.Config) {
	if pgTimeout.Load() != nil {
		return
	}
	c := cfg.Copy()
	c.Fallbacks, c.ConnectTimeout, c.AfterConnect, c.ValidateConnect = nil, 0, nil, nil
	c.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil }
	c.DialFunc = func(context.Context, string, string) (net.Conn, error) { return nil, os.ErrDeadlineExceeded }
	_, err := pgconn.ConnectConfig(deadlinePassed{context.Background()}, c)
	if t := timeoutNode(err); t != nil && errors.Is(t, context.DeadlineExceeded) && !pgconn.SafeToRetry(t) {
		pgTimeout.CompareAndSwap(nil, t)
	}
}

// deadlinePassed is a context whose deadline has passed and which no one
// waits on: Err without Done.
type deadlinePassed struct{ context.Context }

func (deadlinePassed) Err() error { return context.DeadlineExceeded }

// timeoutNode returns the error in err's tree that pgconn.Timeout reports
// true for and none of whose wrapped errors it does: pgconn's own; nil
// when there is none.
func timeoutNode(err error) error {
	if !pgconn.Timeout(err) {
		return nil
	}
	var wrapped []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		wrapped = []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		wrapped = u.Unwrap()
	}
	for _, w := range wrapped {
		if t := timeoutNode(w); t != nil {
			return t
		}
	}
	return err
}

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
//
// Behind PgBouncer (pooler), the cancel request's socket is kept open until
// PgBouncer closes it, for at most pgbouncerCancelHold, after the call has
// returned if need be: the call still waits at most wait.
type cancelHandler struct {
	conn   *pgconn.PgConn
	wire   *wireConn // nil when respool did not dial the connection
	wait   time.Duration
	pooler bool
	done   chan struct{} // closed when the last HandleCancel's request has ended
	// deadline is the last HandleCancel's: when the call gives up on the
	// server.
	deadline time.Time
}

func newCancelHandler(c *pgconn.PgConn, wait time.Duration, pooler bool) *cancelHandler {
	h := &cancelHandler{conn: c, wait: wait, pooler: pooler}
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
	h.done, h.deadline = done, deadline
	requestDeadline := deadline
	if h.pooler {
		requestDeadline = time.Now().Add(max(h.wait, pgbouncerCancelHold))
	}
	go func() {
		defer close(done)
		ctx, cancel := context.WithDeadline(context.Background(), requestDeadline)
		defer cancel()
		_ = h.conn.CancelRequest(ctx)
	}()
}

func (h *cancelHandler) HandleUnwatchAfterCancel() {
	if h.pooler {
		t := time.NewTimer(time.Until(h.deadline))
		select {
		case <-h.done:
		case <-t.C: // the request goes on without the call
		}
		t.Stop()
	} else {
		<-h.done
	}
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
