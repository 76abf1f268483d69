package pgbouncer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool"
	"github.com/respool/respool/pool"
)

// The workload: each client runs goroutines × iterations, through a pool of
// clientConns connections, more than PgBouncer's poolSize server
// connections. Every iteration runs an ad-hoc query, a prepared
// statement and a transaction; every cancelEvery-th also a pg_sleep whose
// context ends after cancelAfter, then a query.
const (
	goroutines  = 12
	iterations  = 40
	clientConns = 8
	cancelEvery = 10
	cancelAfter = 50 * time.Millisecond
	// respoolBound bounds respool's run (2.6–4.5s alone, 12s beside
	// make lint under -race: each cancelled statement waits for PgBouncer
	// to forward its cancel request, which takes a new server connection);
	// othersBound the other clients' runs, whose overrun is only logged.
	respoolBound = 25 * time.Second
	othersBound  = 8 * time.Second
)

// The operations counted.
const (
	opQuery    = "query"
	opPrepared = "prepared"
	opTx       = "tx"
	opAfter    = "after cancel" // the query after a cancelled statement
	opCancel   = "cancel"       // a cancelled statement that did not fail with its context's error (or respool's refusal to start it, pool.ErrOverloaded)
)

var ops = []string{opQuery, opPrepared, opTx, opAfter, opCancel}

// client is one of the pools compared.
type client interface {
	query(ctx context.Context, n int) error
	prepared(ctx context.Context, n int) error
	tx(ctx context.Context, name string, n int) error
	sleep(ctx context.Context) error
	close()
}

// counts are a client's errors by operation, with the first message of each.
type counts struct {
	mu    sync.Mutex
	errs  map[string]int
	first map[string]string
	runs  map[string]int
	// timedOut: the run did not end within its bound (pgx stdlib,
	// once in 5 runs under -race: a query after a cancelled statement
	// waited out the bound; not examined).
	timedOut bool
}

func (c *counts) add(op string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[op]++
	if err == nil {
		return
	}
	c.errs[op]++
	if _, ok := c.first[op]; !ok {
		c.first[op] = err.Error()
	}
}

// run runs the workload on cl; name tags its transactions' rows.
func run(cl client, name string, bound time.Duration) *counts {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c := &counts{errs: map[string]int{}, first: map[string]string{}, runs: map[string]int{}}
	var wg sync.WaitGroup
	var seq atomic.Int64
	for range goroutines {
		wg.Go(func() {
			for i := range iterations {
				if ctx.Err() != nil {
					return
				}
				n := int(seq.Add(1))
				c.add(opQuery, cl.query(ctx, n))
				c.add(opPrepared, cl.prepared(ctx, n))
				c.add(opTx, cl.tx(ctx, name, n))
				if i%cancelEvery == cancelEvery-1 {
					sctx, scancel := context.WithTimeout(ctx, cancelAfter)
					err := cl.sleep(sctx)
					scancel()
					if err == nil {
						err = errors.New("pg_sleep(1) ended before its context")
					} else if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "57014") ||
						errors.Is(err, pool.ErrOverloaded) {
						err = nil // the expected ends: stopped, or refused by respool as unable to meet its deadline
					}
					c.add(opCancel, err)
					c.add(opAfter, cl.query(ctx, n))
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		c.timedOut = true
	}
	return c
}

// sqlClient is a *sql.DB: respool's or pgx's driver.
type sqlClient struct {
	db   *sql.DB
	mu   sync.Mutex
	stmt *sql.Stmt // prepared once, by the first caller that manages to
}

func (c *sqlClient) query(ctx context.Context, n int) error {
	var v int
	if err := c.db.QueryRowContext(ctx, "SELECT $1::int", n).Scan(&v); err != nil {
		return err
	}
	if v != n {
		return fmt.Errorf("SELECT %d read %d", n, v)
	}
	return nil
}

func (c *sqlClient) prepare(ctx context.Context) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stmt == nil {
		s, err := c.db.PrepareContext(ctx, "SELECT $1::int + 1")
		if err != nil {
			return nil, err
		}
		c.stmt = s
	}
	return c.stmt, nil
}

func (c *sqlClient) prepared(ctx context.Context, n int) error {
	s, err := c.prepare(ctx)
	if err != nil {
		return err
	}
	var v int
	if err := s.QueryRowContext(ctx, n).Scan(&v); err != nil {
		return err
	}
	if v != n+1 {
		return fmt.Errorf("prepared: %d+1 read %d", n, v)
	}
	return nil
}

func (c *sqlClient) tx(ctx context.Context, name string, n int) error {
	s, err := c.prepare(ctx)
	if err != nil {
		return err
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, ErrTxDone
	var v int
	if err := tx.StmtContext(ctx, s).QueryRowContext(ctx, n).Scan(&v); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO pgb_rows (client, v) VALUES ($1, $2)", name, v); err != nil {
		return err
	}
	return tx.Commit()
}

func (c *sqlClient) sleep(ctx context.Context) error {
	_, err := c.db.ExecContext(ctx, "SELECT pg_sleep(1)")
	return err
}

func (c *sqlClient) close() {
	if c.stmt != nil {
		_ = c.stmt.Close()
	}
	_ = c.db.Close()
}

// poolClient is a pgxpool.Pool; its prepared statement is pgx's named one,
// prepared on each connection that runs it.
type poolClient struct{ p *pgxpool.Pool }

const poolStmt = "ps_plus1"

func (c *poolClient) query(ctx context.Context, n int) error {
	var v int
	if err := c.p.QueryRow(ctx, "SELECT $1::int", n).Scan(&v); err != nil {
		return err
	}
	if v != n {
		return fmt.Errorf("SELECT %d read %d", n, v)
	}
	return nil
}

func (c *poolClient) prepared(ctx context.Context, n int) error {
	return c.p.AcquireFunc(ctx, func(conn *pgxpool.Conn) error {
		if _, err := conn.Conn().Prepare(ctx, poolStmt, "SELECT $1::int + 1"); err != nil {
			return err
		}
		var v int
		if err := conn.QueryRow(ctx, poolStmt, n).Scan(&v); err != nil {
			return err
		}
		if v != n+1 {
			return fmt.Errorf("prepared: %d+1 read %d", n, v)
		}
		return nil
	})
}

func (c *poolClient) tx(ctx context.Context, name string, n int) error {
	return pgx.BeginFunc(ctx, c.p, func(tx pgx.Tx) error {
		var v int
		if err := tx.QueryRow(ctx, "SELECT $1::int + 1", n).Scan(&v); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO pgb_rows (client, v) VALUES ($1, $2)", name, v)
		return err
	})
}

func (c *poolClient) sleep(ctx context.Context) error {
	_, err := c.p.Exec(ctx, "SELECT pg_sleep(1)")
	return err
}

func (c *poolClient) close() { c.p.Close() }

// TestWorkloadThroughPgBouncer runs the workload through PgBouncer in
// transaction mode with respool (respool_pgbouncer=transaction), pgx's
// database/sql driver and pgxpool (both in pgx's exec mode, which works
// there), and respool without the key in exec mode (what the key changes),
// one after the other, each with more goroutines (12) and client
// connections (8) than PgBouncer has server connections (4). respool has no
// error but the cancelled statements, each of which fails with its
// context's error, and every transaction's row is there; PgBouncer is still
// running. The others' errors are logged: pgx's driver and pgxpool prepare
// named server statements, which PgBouncer's other server connections lack
// or hold already.
func TestWorkloadThroughPgBouncer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 58*time.Second) // the clients' runs (at most 25+3×8s) and the checks after them
	defer cancel()
	direct, err := pgx.Connect(ctx, pg.PgxDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	if _, err := direct.Exec(ctx, "DROP TABLE IF EXISTS pgb_rows; CREATE TABLE pgb_rows (client text, v int)"); err != nil {
		t.Fatal(err)
	}

	dsn := bouncer.PgxDSN()
	clients := []struct {
		name string
		open func() (client, error)
	}{
		{"respool", func() (client, error) {
			db, _, err := respool.OpenDB(fmt.Sprintf("%s&respool_pgbouncer=transaction&respool_max_conns=%d", dsn, clientConns))
			return &sqlClient{db: db}, err
		}},
		{"pgx stdlib (exec)", func() (client, error) {
			db, err := sql.Open("pgx", dsn+"&default_query_exec_mode=exec")
			if err == nil {
				db.SetMaxOpenConns(clientConns)
			}
			return &sqlClient{db: db}, err
		}},
		{"pgxpool (exec)", func() (client, error) {
			p, err := pgxpool.New(ctx, fmt.Sprintf("%s&default_query_exec_mode=exec&pool_max_conns=%d", dsn, clientConns))
			return &poolClient{p: p}, err
		}},
		// What the key changes (its Warn line goes to slog.Default). Its cancel
		// wait is off: a cancel request's socket closed at the 500ms wait,
		// before PgBouncer answered, ended PgBouncer 1.18 (bug #801) in 1 run
		// of 5 under -race; pgx's own cancel waits for PgBouncer's answer.
		{"respool without the key (exec, cancel_wait off)", func() (client, error) {
			db, _, err := respool.OpenDB(fmt.Sprintf("%s&default_query_exec_mode=exec&respool_cancel_wait=off&respool_max_conns=%d", dsn, clientConns))
			return &sqlClient{db: db}, err
		}},
	}
	var table []string
	for _, cl := range clients {
		c, err := cl.open()
		if err != nil {
			t.Fatalf("%s: %v", cl.name, err)
		}
		start := time.Now()
		bound := othersBound
		if cl.name == "respool" {
			bound = respoolBound
		}
		got := run(c, cl.name, bound)
		took := time.Since(start)
		c.close()
		if err := bouncer.Exited(); err != nil {
			t.Fatalf("after %s: %v", cl.name, err)
		}
		var rows int
		if err := direct.QueryRow(ctx, "SELECT count(*) FROM pgb_rows WHERE client = $1", cl.name).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		row := fmt.Sprintf("| %s |", cl.name)
		for _, op := range ops {
			row += fmt.Sprintf(" %d / %d |", got.errs[op], got.runs[op])
		}
		table = append(table, row+fmt.Sprintf(" %d | %v |", rows, took.Round(10*time.Millisecond)))
		var firsts []string
		for op, msg := range got.first {
			firsts = append(firsts, fmt.Sprintf("  %s: %s", op, msg))
		}
		sort.Strings(firsts)
		if len(firsts) > 0 {
			t.Logf("%s, first error of each operation:\n%s", cl.name, strings.Join(firsts, "\n"))
		}
		if cl.name != "respool" {
			if got.timedOut {
				t.Logf("%s: the workload did not end within %v", cl.name, bound)
			}
			continue
		}
		if got.timedOut {
			t.Errorf("respool: the workload did not end within %v", bound)
		}
		for _, op := range ops {
			if got.errs[op] != 0 {
				t.Errorf("respool: %d of %d %s failed; want none (first: %s)", got.errs[op], got.runs[op], op, got.first[op])
			}
		}
		if want := goroutines * iterations / cancelEvery; got.runs[opCancel] != want {
			t.Errorf("respool: %d cancelled statements; want %d", got.runs[opCancel], want)
		}
		if ok := got.runs[opTx] - got.errs[opTx]; rows != ok {
			t.Errorf("respool: %d rows inserted; want one per committed transaction, %d", rows, ok)
		}
	}
	t.Logf("through PgBouncer (transaction mode, %d server connections), %d goroutines × %d iterations, %d client connections; errors / runs:\n"+
		"| client | %s | rows committed | time |\n%s", poolSize, goroutines, iterations, clientConns,
		strings.Join(ops, " | "), strings.Join(table, "\n"))
}
