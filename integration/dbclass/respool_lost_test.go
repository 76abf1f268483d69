package dbclass

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/respool/respool"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
)

// TestRespoolRunsALostStatementOnce is TestPgxStdlibResendsLostStatement
// through respool's driver, beside the plain driver, on both servers: the
// proxy cuts the connection right after the statement reached the server.
// With pgx, the plain driver sends the UPDATE again (database/sql retries
// pgx's driver.ErrBadConn); respool sends it once and returns
// respool.ErrStatementLost, an ambiguous outcome. With go-sql-driver/mysql
// neither resends (the driver reports a failed read as
// mysql.ErrInvalidConn, which database/sql does not retry).
func TestRespoolRunsALostStatementOnce(t *testing.T) {
	const update = "UPDATE " + lostMarker + " SET n = n + 1 WHERE k = 1"
	eachServer(t, func(t *testing.T, s *servers.Server) {
		for _, through := range []string{"plain", "respool"} {
			t.Run(through, func(t *testing.T) {
				ctx := ctxT(t)
				counter := counterTable(t, ctx, s)
				p := startCutProxy(t, s.Addr(), lostMarker)
				dsn := strings.Replace(s.DSN(), s.Addr(), p.Addr(), 1)
				var db *sql.DB
				if through == "plain" {
					db = servers.OpenDB(t, s.DriverName(), dsn)
				} else {
					db = servers.OpenDB(t, "respool", dsn+"&respool_max_conns=2")
				}
				_, err := db.ExecContext(ctx, update)
				cuts := int(p.cuts.Load())
				waitCounter(t, ctx, counter, cuts)
				t.Logf("%s %s: one ExecContext sent the UPDATE %d times, which ran %d times; error %q classified %v",
					s.Kind, through, cuts, counter(), err, dbguard.Classify(err))
				if err == nil {
					t.Fatal("no error; the proxy did not cut the connection")
				}
				if through == "plain" {
					if s.Kind == servers.KindPostgres && cuts < 2 {
						t.Errorf("plain pgx sent the statement %d times; the hazard respool guards against is gone", cuts)
					}
					return
				}
				if cuts != 1 || counter() != 1 {
					t.Errorf("respool sent the statement %d times and it ran %d times; want once", cuts, counter())
				}
				checkAmbiguous(t, err)
				if s.Kind == servers.KindPostgres && !errors.Is(err, respool.ErrStatementLost) {
					t.Errorf("err = %v; want respool.ErrStatementLost", err)
				}
				// The pool is whole after it: the next statement runs.
				if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
					t.Errorf("the next statement: %v", err)
				}
			})
		}
	})
}
