package pgxfactory

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/factory"
	"github.com/respool/respool/internal/pgxdial"
)

// destroyTimeout bounds the polite close of a connection.
const destroyTimeout = 5 * time.Second

// ErrInTransaction is Validate's verdict on a connection left inside a
// transaction.
var ErrInTransaction = errors.New("pgxfactory: connection left inside a transaction")

// ErrClosed is Validate's verdict on a closed connection.
var ErrClosed = errors.New("pgxfactory: connection closed")

// Factory makes *pgx.Conn from a pgx.ConnConfig.
type Factory struct {
	// Config is copied for each connection. Required.
	Config *pgx.ConnConfig
	// Hooks are the optional steps around Take and GiveBack (pgxpool's
	// AfterConnect, BeforeAcquire and AfterRelease).
	Hooks factory.Hooks[*pgx.Conn]
}

var (
	_ factory.Factory[*pgx.Conn]      = (*Factory)(nil)
	_ factory.HookProvider[*pgx.Conn] = (*Factory)(nil)
)

// LifecycleHooks returns f.Hooks.
func (f *Factory) LifecycleHooks() factory.Hooks[*pgx.Conn] { return f.Hooks }

// New parses connString with pgx.ParseConfig (whose errors never show the
// password).
func New(connString string) (*Factory, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	return &Factory{Config: cfg}, nil
}

// attemptKey marks the context of one Create (see pgxdial.StartedCancelsOnly).
type attemptKey struct{}

// Create connects, bounded by ctx. A connection whose startup fails sends
// no cancel request (see pgxdial.StartedCancelsOnly): there is no session
// to cancel.
func (f *Factory) Create(ctx context.Context) (*pgx.Conn, error) {
	cc, attempt := f.Config.Copy(), new(byte)
	pgxdial.StartedCancelsOnly(cc, func(ctx context.Context) bool { return ctx.Value(attemptKey{}) == attempt })
	return pgx.ConnectConfig(context.WithValue(ctx, attemptKey{}, attempt), cc)
}

// Validate rejects a closed connection or one left inside a transaction.
func (f *Factory) Validate(c *pgx.Conn) error {
	if c.IsClosed() {
		return ErrClosed
	}
	if c.PgConn().TxStatus() != 'I' {
		return ErrInTransaction
	}
	return nil
}

// Test pings the server.
func (f *Factory) Test(ctx context.Context, c *pgx.Conn) error { return c.Ping(ctx) }

// Destroy closes the connection, telling the server, within 5 s.
func (f *Factory) Destroy(c *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), destroyTimeout)
	defer cancel()
	return c.Close(ctx)
}
