package sqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool/integration/servers"
)

// TestDemotedPrimaryWritesMoveToTheWritableServer: a PostgreSQL primary
// demoted in place (default_transaction_read_only on, reloaded) while a
// second server, listed after it in a multi-host DSN with
// target_session_attrs=read-write, takes writes. Through respool every
// write after the demotion lands on the second server: a refusal closes
// the connection, the connections made before are closed when taken, and
// the refused write runs again on a new connection, which pgx dials to the
// writable host; at most one refusal per pooled connection reaches the
// server, none the caller. pgx's driver beside it keeps its connections to
// the demoted server and its writes keep failing (reported, not bounded).
func TestDemotedPrimaryWritesMoveToTheWritableServer(t *testing.T) {
	ctx := ctxT(t)
	second, err := servers.StartPostgres(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Stop(context.Background()) })
	const table, poolSize, writers, writes = "respool_demoted", 4, 4, 25
	for _, s := range []*servers.Server{pg, second} {
		servers.MustExec(t, ctx, monitor(t, s), "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (who text)")
	}
	dsn := fmt.Sprintf("postgres://%s:%s@%s,%s/%s?sslmode=disable&target_session_attrs=read-write",
		pg.User, pg.Password, pg.Addr(), second.Addr(), pg.Database)
	plain := servers.OpenDB(t, "pgx", dsn)
	plain.SetMaxOpenConns(poolSize)
	plain.SetMaxIdleConns(poolSize)
	rp, _ := openDB(t, dsn+fmt.Sprintf("&respool_max_conns=%d", poolSize))
	dbs := map[string]*sql.DB{"pgx": plain, "respool": rp}
	for _, db := range dbs {
		warm(t, ctx, db, poolSize) // every connection to the first server, the writable one
	}

	admin := monitor(t, pg)
	setReadOnly := func(on string) {
		servers.MustExec(t, ctx, admin, "ALTER SYSTEM SET default_transaction_read_only = "+on, "SELECT pg_reload_conf()")
		servers.WaitFor(t, ctx, "default_transaction_read_only "+on, func() (bool, error) {
			var v string
			err := admin.QueryRowContext(ctx, "SHOW default_transaction_read_only").Scan(&v)
			return v == on, err
		})
	}
	setReadOnly("on")
	t.Cleanup(func() { setReadOnly("off") })

	rows := func(s *servers.Server, who string) int {
		var n int
		if err := monitor(t, s).QueryRowContext(ctx, "SELECT count(*) FROM "+table+" WHERE who = $1", who).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, name := range []string{"pgx", "respool"} {
		db := dbs[name]
		var mu sync.Mutex
		var failed, readOnly int
		var first error
		var wg sync.WaitGroup
		start := time.Now()
		for range writers {
			wg.Go(func() {
				for range writes {
					wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					_, err := db.ExecContext(wctx, "INSERT INTO "+table+" VALUES ($1)", name)
					cancel()
					if err == nil {
						continue
					}
					var pgErr *pgconn.PgError
					mu.Lock()
					failed++
					if errors.As(err, &pgErr) && pgErr.Code == "25006" {
						readOnly++
					}
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		onSecond, onFirst := rows(second, name), rows(pg, name)
		t.Logf("%s: %d writes in %v: %d failed (%d read-only), %d on the writable server, %d on the demoted one; first error: %v",
			name, writers*writes, time.Since(start).Round(time.Millisecond), failed, readOnly, onSecond, onFirst, first)
		if name == "respool" && (failed != 0 || onSecond != writers*writes) {
			t.Errorf("respool: %d writes failed (first: %v), %d of %d on the writable server; want none failed, all there",
				failed, first, onSecond, writers*writes)
		}
	}
}
