package pgxdial

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type attemptKey struct{}

// TestStartedCancelsOnly: before AfterConnect only the attempt's own dials
// reach the dial function; after it every dial does, and the config's own
// AfterConnect still runs.
func TestStartedCancelsOnly(t *testing.T) {
	var dialed, afterConnects int
	cc := &pgx.ConnConfig{}
	cc.DialFunc = func(context.Context, string, string) (net.Conn, error) { dialed++; return nil, nil }
	cc.AfterConnect = func(context.Context, *pgconn.PgConn) error { afterConnects++; return nil }
	StartedCancelsOnly(cc, func(ctx context.Context) bool { return ctx.Value(attemptKey{}) != nil })
	own, other := context.WithValue(context.Background(), attemptKey{}, 1), context.Background()

	if _, err := cc.DialFunc(other, "tcp", "db:5432"); !errors.Is(err, ErrNoSessionToCancel) || dialed != 0 {
		t.Fatalf("another dial before the startup: err %v, %d dials; want ErrNoSessionToCancel, none", err, dialed)
	}
	if _, err := cc.DialFunc(own, "tcp", "db:5432"); err != nil || dialed != 1 {
		t.Fatalf("the attempt's dial: err %v, %d dials; want nil, 1", err, dialed)
	}
	if err := cc.AfterConnect(own, nil); err != nil || afterConnects != 1 {
		t.Fatalf("AfterConnect: err %v, the config's ran %d times; want nil, 1", err, afterConnects)
	}
	if _, err := cc.DialFunc(other, "tcp", "db:5432"); err != nil || dialed != 2 {
		t.Fatalf("another dial after the startup: err %v, %d dials; want nil, 2", err, dialed)
	}
}
