package sqldriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

// This file tests respool_init_sql and the hooks of respool.Config
// (AfterConnect, BeforeAcquire, AfterRelease) on both servers.

// initSQL returns two statements for s that set what sessionSettings reads:
// PostgreSQL's application_name (which a monitor sees in pg_stat_activity)
// and statement_timeout; MariaDB's wait_timeout and a user variable.
func initSQL(s *servers.Server, app string) []string {
	if s.Kind == servers.KindPostgres {
		return []string{"SET application_name = '" + app + "'", "SET statement_timeout = 4321"}
	}
	return []string{"SET @@session.wait_timeout = 4321", "SET @respool_app = '" + app + "'"}
}

// sessionSettings reads, on conn, what initSQL set.
func sessionSettings(t *testing.T, ctx context.Context, conn *sql.Conn, s *servers.Server) (app, timeout string) {
	t.Helper()
	q := "SELECT current_setting('application_name'), current_setting('statement_timeout')"
	if s.Kind != servers.KindPostgres {
		q = "SELECT @respool_app, CAST(@@session.wait_timeout AS CHAR)"
	}
	if err := conn.QueryRowContext(ctx, q).Scan(&app, &timeout); err != nil {
		t.Fatal(err)
	}
	return app, timeout
}

// TestInitSQLRunsOnEveryNewConnection gives two respool_init_sql keys and
// finds both settings on each of two connections; on PostgreSQL a monitor
// sees the application_name of both sessions. A statement the server
// refuses fails the query with the server's own error.
func TestInitSQLRunsOnEveryNewConnection(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		app := "respool-init-" + s.Kind
		keys := "respool_max_conns=2"
		for _, q := range initSQL(s, app) {
			keys += "&respool_init_sql=" + url.PathEscape(q)
		}
		db, _ := openDB(t, withKeys(s, keys))
		var conns []*sql.Conn
		for range 2 {
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conns = append(conns, conn)
		}
		wantTimeout := "4321"
		if s.Kind == servers.KindPostgres {
			wantTimeout = "4321ms"
		}
		for i, conn := range conns {
			if gotApp, gotTimeout := sessionSettings(t, ctx, conn, s); gotApp != app || gotTimeout != wantTimeout {
				t.Errorf("connection %d: settings %q, %q; want %q, %q", i, gotApp, gotTimeout, app, wantTimeout)
			}
		}
		if s.Kind == servers.KindPostgres {
			var n int
			if err := monitor(t, s).QueryRowContext(ctx,
				"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 2 {
				t.Errorf("the monitor sees %d sessions named %q; want 2", n, app)
			}
		}

		bad, _ := openDB(t, withKeys(s, "respool_init_sql="+url.PathEscape("SET respool_no_such_setting = 1")))
		err := bad.PingContext(ctx)
		var pgErr *pgconn.PgError
		var myErr *mysql.MySQLError
		if !errors.As(err, &pgErr) && !errors.As(err, &myErr) {
			t.Fatalf("ping with a failing init SQL: %T %v; want the server's error", err, err)
		}
		t.Logf("failing init SQL: %v", err)
	})
}

// openHooked opens s through respool with at most one connection and the
// hooks set by set.
func openHooked(t *testing.T, s *servers.Server, set func(cfg *respool.Config)) (*sql.DB, *respool.Connector) {
	t.Helper()
	cfg, err := respool.ParseDSN(withKeys(s, "respool_max_conns=1"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pool.Logger = slog.New(slog.DiscardHandler) // the hooks' refusals are logged
	set(cfg)
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	return db, c
}

// TestBeforeAcquireRejectsAConnection rejects the first idle connection
// checked: it is closed on the server, and the query runs on a new session.
func TestBeforeAcquireRejectsAConnection(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		var rejected, calls atomic.Int32
		db, c := openHooked(t, s, func(cfg *respool.Config) {
			cfg.BeforeAcquire = func(ctx context.Context, conn sqldriver.Conn) error {
				calls.Add(1)
				if ctx.Value(ctxKey{}) != "caller" {
					return errors.New("BeforeAcquire lacks the caller's values")
				}
				if rejected.CompareAndSwap(0, 1) {
					return errors.New("stale session")
				}
				return nil
			}
		})
		ctx = context.WithValue(ctx, ctxKey{}, "caller")
		first := sessionID(t, ctx, db, s) // a new connection: not checked
		second := sessionID(t, ctx, db, s)
		third := sessionID(t, ctx, db, s)
		if first == second || second != third {
			t.Errorf("sessions %d, %d, %d; want the first rejected, then one session", first, second, third)
		}
		if n := calls.Load(); n != 2 {
			t.Errorf("BeforeAcquire called %d times; want 2 (once per take from idle)", n)
		}
		waitSessionGone(t, ctx, s, first)
		if st := c.Stats(); st.Destroys.Rejected != 1 {
			t.Errorf("Destroys.Rejected %d; want 1", st.Destroys.Rejected)
		}
	})
}

type ctxKey struct{}

// TestAfterReleaseDiscardsAConnection discards the first connection given
// back: it is closed on the server, and the next query runs on a new
// session.
func TestAfterReleaseDiscardsAConnection(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		var discarded atomic.Int32
		db, c := openHooked(t, s, func(cfg *respool.Config) {
			cfg.AfterRelease = func(ctx context.Context, conn sqldriver.Conn) error {
				if _, ok := ctx.Deadline(); !ok {
					return errors.New("AfterRelease has no deadline")
				}
				if discarded.CompareAndSwap(0, 1) {
					return errors.New("RESET failed")
				}
				return nil
			}
		})
		first := sessionID(t, ctx, db, s)
		waitSessionGone(t, ctx, s, first)
		second := sessionID(t, ctx, db, s)
		third := sessionID(t, ctx, db, s)
		if first == second || second != third {
			t.Errorf("sessions %d, %d, %d; want the first discarded, then one session", first, second, third)
		}
		waitPool(t, ctx, c, func(st pool.Stats) bool { return st.Destroys.Rejected == 1 })
	})
}

// TestAfterConnectFailureIsTheCreationsError: the caller whose query asked
// for the connection gets AfterConnect's error, and the session is closed.
// AfterConnect gets the real driver's connection: here it runs a statement
// on it first, to name the session it closes.
func TestAfterConnectFailureIsTheCreationsError(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		errRole := errors.New("no role for this service")
		var id atomic.Int64
		db, _ := openHooked(t, s, func(cfg *respool.Config) {
			cfg.AfterConnect = func(ctx context.Context, conn sqldriver.Conn) error {
				q := "SELECT CONNECTION_ID()"
				if s.Kind == servers.KindPostgres {
					q = "SELECT pg_backend_pid()"
				}
				rows, err := conn.(sqldriver.QueryerContext).QueryContext(ctx, q, nil)
				if err != nil {
					return err
				}
				dest := make([]sqldriver.Value, 1)
				if err := rows.Next(dest); err != nil {
					return err
				}
				if err := rows.Close(); err != nil {
					return err
				}
				var v int64
				switch d := dest[0].(type) {
				case int64:
					v = d
				case []byte: // go-sql-driver/mysql's text protocol
					if v, err = strconv.ParseInt(string(d), 10, 64); err != nil {
						return err
					}
				default:
					return fmt.Errorf("session id %T %v", d, d)
				}
				id.Store(v)
				return errRole
			}
		})
		err := db.PingContext(ctx)
		if !errors.Is(err, errRole) {
			t.Fatalf("ping: %v; want AfterConnect's error", err)
		}
		waitSessionGone(t, ctx, s, id.Load())
	})
}
