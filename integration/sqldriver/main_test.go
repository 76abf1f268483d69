package sqldriver

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

var pg, maria *servers.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(servers.WithServers(m, func(p, mdb *servers.Server) { pg, maria = p, mdb }))
}

// eachServer runs fn as a subtest against PostgreSQL and MariaDB.
func eachServer(t *testing.T, fn func(t *testing.T, s *servers.Server)) {
	for _, s := range []*servers.Server{pg, maria} {
		t.Run(s.Kind, func(t *testing.T) { fn(t, s) })
	}
}

// withKeys appends respool keys to s's DSN (both forms take ?a=b&c=d).
func withKeys(s *servers.Server, keys string) string {
	dsn := s.DSN()
	if strings.Contains(dsn, "?") {
		return dsn + "&" + keys
	}
	return dsn + "?" + keys
}

// placeholder returns the n-th bind placeholder of s's dialect.
func placeholder(s *servers.Server, n int) string {
	if s.Kind == servers.KindPostgres {
		return "$" + string(rune('0'+n))
	}
	return "?"
}

func sleepQuery(s *servers.Server, seconds string) string {
	if s.Kind == servers.KindPostgres {
		return "SELECT pg_sleep(" + seconds + ")"
	}
	return "SELECT SLEEP(" + seconds + ")"
}

// monitor opens a plain connection, outside respool, to count the server's
// connections.
func monitor(t *testing.T, s *servers.Server) *sql.DB {
	t.Helper()
	return openOne(t, s.DriverName(), s.DSN())
}

// openOne opens dsn with the plain driver, one connection at most; the
// *sql.DB is closed when the test ends.
func openOne(t *testing.T, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// signalHandler is a slog.Handler that records everything and signals when
// a record with the given message arrives.
type signalHandler struct {
	mu   *sync.Mutex
	buf  *bytes.Buffer
	msg  string
	seen chan struct{} // receives once per record with message msg
}

func newSignalHandler(msg string) *signalHandler {
	return &signalHandler{mu: new(sync.Mutex), buf: new(bytes.Buffer), msg: msg, seen: make(chan struct{}, 64)}
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *signalHandler) WithGroup(string) slog.Handler            { return h }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.buf.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		h.buf.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	h.buf.WriteString("\n")
	h.mu.Unlock()
	if r.Message == h.msg {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return nil
}

func (h *signalHandler) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}

// openLogged opens dsn through respool with the pool's log going to a
// signalHandler for msg; the *sql.DB is closed when the test ends.
func openLogged(t *testing.T, dsn, msg string) (*sql.DB, *respool.Connector, *signalHandler) {
	t.Helper()
	cfg, err := respool.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	h := newSignalHandler(msg)
	cfg.Pool.Logger = slog.New(h)
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	return db, c, h
}

// waitSessionGone waits until the server no longer lists session id.
func waitSessionGone(t *testing.T, ctx context.Context, s *servers.Server, id int64) {
	t.Helper()
	q := "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"
	if s.Kind != servers.KindPostgres {
		q = "SELECT COUNT(*) FROM information_schema.processlist WHERE id = ?"
	}
	mon := monitor(t, s)
	servers.WaitFor(t, ctx, fmt.Sprintf("session %d to end", id), func() (bool, error) {
		var n int
		err := mon.QueryRowContext(ctx, q, id).Scan(&n)
		return n == 0, err
	})
}
