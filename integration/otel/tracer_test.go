package otel

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
)

type requestKey struct{}

// tracer is a pgx QueryTracer that notes each query with the request id
// its context carries.
type tracer struct {
	mu   sync.Mutex
	seen map[string]string // SQL → request id
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	id, _ := ctx.Value(requestKey{}).(string)
	tr.mu.Lock()
	tr.seen[d.SQL] = id
	tr.mu.Unlock()
	return ctx
}

func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (tr *tracer) requestOf(sql string) (string, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	id, ok := tr.seen[sql]
	return id, ok
}

// A pgx QueryTracer given through Config.PgxBeforeConnect on the DSN path
// sees every query with its caller's context, and respool's own pgx
// connector stays on: a statement ended by its deadline is cancelled at the
// server and reported as pgx stdlib reports it (pgconn.Timeout), and the
// pool serves the next query.
func TestPgxTracerThroughTheHook(t *testing.T) {
	cfg, err := respool.ParseDSN(pg.DSN() + "&respool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracer{seen: map[string]string{}}
	cfg.PgxBeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		cc.Tracer = tr
		return nil
	}
	c, err := respool.NewConnector(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()

	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), requestKey{}, "req-42"), 30*time.Second)
	defer cancel()
	const q = "SELECT 42 AS traced"
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil || n != 42 {
		t.Fatalf("%s = %d, %v", q, n, err)
	}
	if id, ok := tr.requestOf(q); !ok || id != "req-42" {
		t.Errorf("the tracer saw %q: %v, with request %q; want it seen with req-42", q, ok, id)
	}

	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	began := time.Now()
	_, err = db.ExecContext(short, "SELECT pg_sleep(10)")
	if took := time.Since(began); !pgconn.Timeout(err) || took > 5*time.Second {
		t.Fatalf("a 10 s statement with a 200 ms deadline = %v after %v; want pgconn.Timeout true, well before 10 s", err, took)
	}
	if id, ok := tr.requestOf("SELECT pg_sleep(10)"); !ok || id != "req-42" {
		t.Errorf("the tracer saw the cancelled statement: %v, with request %q; want req-42", ok, id)
	}
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		t.Fatalf("after the cancel: %v", err)
	}
}
