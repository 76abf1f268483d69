package respool

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/internal/pgxdial"
	"github.com/respool/respool/pool"
)

// pgxDestroyTimeout bounds the polite close of a native connection.
const pgxDestroyTimeout = 5 * time.Second

// The Validate verdicts of PgxFactory: the pool destroys the connection and
// logs them; no caller sees them.
var (
	errPgxInTransaction = errors.New("respool: pgx connection left inside a transaction")
	errPgxClosed        = errors.New("respool: pgx connection closed")
)

// PgxFactory returns the pool.Factory of native pgx connections (*pgx.Conn)
// made from cc, for code that wants pgx's own API with respool's pool and
// leak detection:
//
//	cc, err := pgx.ParseConfig("postgres://app@db/app")
//	p, err := pool.New(respool.PgxFactory(cc), pool.Config{MaxObjects: 10})
//
// Create connects with a copy of cc, bounded by its context (a connection
// whose startup fails sends the server no cancel request: there is no
// session to cancel); Validate refuses a closed connection or one left
// inside a transaction; Test pings the server; Destroy closes the
// connection, telling the server, within 5 s. Set the hook fields
// (AfterCreate, BeforeHandOut, AfterGiveBack: pgxpool's AfterConnect,
// BeforeAcquire and AfterRelease) on the returned value. cc is parsed by
// pgx, so TLS, tracers and OnNotice are yours to set; respool's respool_*
// DSN keys do not apply here (pool settings are pool.Config fields).
//
// For the creation path of respool's database/sql driver (retry when
// nothing reached the server, a circuit breaker, the pause after "too many
// connections", an optional connect-rate limit), wrap it with package
// dbguard (see dbguard.Factory).
func PgxFactory(cc *pgx.ConnConfig) pool.Factory[*pgx.Conn] {
	return pool.Factory[*pgx.Conn]{
		Create:   func(ctx context.Context) (*pgx.Conn, error) { return pgxCreate(ctx, cc) },
		Validate: pgxValidate,
		Test:     func(ctx context.Context, c *pgx.Conn) error { return c.Ping(ctx) },
		Destroy:  pgxDestroy,
	}
}

// pgxAttemptKey marks the context of one Create (see
// pgxdial.StartedCancelsOnly).
type pgxAttemptKey struct{}

// pgxCreate connects with a copy of cc, bounded by ctx. A connection whose
// startup fails sends no cancel request (see pgxdial.StartedCancelsOnly):
// there is no session to cancel.
func pgxCreate(ctx context.Context, cc *pgx.ConnConfig) (*pgx.Conn, error) {
	cc, attempt := cc.Copy(), new(byte)
	pgxdial.StartedCancelsOnly(cc, func(ctx context.Context) bool { return ctx.Value(pgxAttemptKey{}) == attempt })
	return pgx.ConnectConfig(context.WithValue(ctx, pgxAttemptKey{}, attempt), cc)
}

// pgxValidate rejects a closed connection or one left inside a transaction.
func pgxValidate(c *pgx.Conn) error {
	if c.IsClosed() {
		return errPgxClosed
	}
	if c.PgConn().TxStatus() != 'I' {
		return errPgxInTransaction
	}
	return nil
}

// pgxDestroy closes the connection, telling the server, within 5 s.
func pgxDestroy(c *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), pgxDestroyTimeout)
	defer cancel()
	return c.Close(ctx)
}
