package pgbouncer

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/respool/respool"
)

// TestInitSQLRefusedInTransactionMode: init SQL cannot hold behind
// PgBouncer's transaction pooling (each transaction may run on another
// server connection, and the settings reach other clients): the DSN is
// refused before any connection, naming the key, its value and why, and so
// is the Config.
func TestInitSQLRefusedInTransactionMode(t *testing.T) {
	db, _, err := respool.OpenDB(bouncer.PgxDSN() + "&respool_pgbouncer=transaction&respool_init_sql=SET%20search_path%20TO%20app")
	var de *respool.DSNError
	if !errors.As(err, &de) || de.Key != "respool_init_sql" || de.Value != "SET search_path TO app" ||
		!strings.Contains(err.Error(), "respool_pgbouncer=transaction") || !errors.Is(err, respool.ErrInvalidConfig) {
		if db != nil {
			_ = db.Close()
		}
		t.Fatalf("OpenDB: %v; want a DSNError naming respool_init_sql, its value and respool_pgbouncer=transaction", err)
	}
	if strings.Contains(err.Error(), bouncer.Password) {
		t.Errorf("the error shows the password: %v", err)
	}
	_, err = respool.NewConnector(respool.Config{DriverName: "pgx", DSN: bouncer.PgxDSN(), PgBouncer: "transaction",
		InitSQL: []string{"SET statement_timeout = '1s'"}})
	if !errors.Is(err, respool.ErrInvalidConfig) || !strings.Contains(err.Error(), "InitSQL (respool_init_sql)") {
		t.Errorf("NewConnector: %v; want ErrInvalidConfig naming InitSQL", err)
	}
}

// TestPreparedStatementThroughPgBouncer: with respool_pgbouncer=transaction
// a statement database/sql prepares behaves as a prepared statement does
// (its syntax error at Prepare, its number of arguments checked), from a
// transaction too, and leaves no named statement on PgBouncer's server
// connections.
func TestPreparedStatementThroughPgBouncer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, _, err := respool.OpenDB(bouncer.PgxDSN() + "&respool_pgbouncer=transaction&respool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.PrepareContext(ctx, "SELEC 1")
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "42601" {
		t.Errorf("Prepare of a syntax error: %v; want the server's 42601 at Prepare", err)
	}
	s, err := db.PrepareContext(ctx, "SELECT $1::int * $2::int")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.QueryRowContext(ctx, 6, 7).Scan(&v); err != nil || v != 42 {
		t.Errorf("prepared 6*7: %d, %v", v, err)
	}
	if err := s.QueryRowContext(ctx, 6).Scan(&v); err == nil || !strings.Contains(err.Error(), "expected 2 arguments, got 1") {
		t.Errorf("prepared with one argument of two: %v; want database/sql's count check", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tx.StmtContext(ctx, s).QueryRowContext(ctx, 5, 5).Scan(&v)
	var named int
	if err == nil {
		err = tx.QueryRowContext(ctx, "SELECT count(*) FROM pg_prepared_statements WHERE statement = 'SELECT $1::int * $2::int'").Scan(&named)
	}
	if err := errors.Join(err, tx.Commit()); err != nil || v != 25 || named != 0 {
		t.Errorf("in a transaction: 5*5 = %d, %d named statements on the server connection, %v; want 25, 0, no error", v, named, err)
	}
}

// TestPgBouncerDetected: a respool pool that meets PgBouncer without
// respool_pgbouncer logs one Warn line asking for it, however many
// connections it makes (4 here: each has 1 chance in 1024 of a made-up
// process id below 2^22, where no line is logged); one to PostgreSQL
// itself, or with the key set, logs none.
func TestPgBouncerDetected(t *testing.T) {
	for _, tt := range []struct {
		name, dsn string
		want      int
	}{
		{"PgBouncer", bouncer.PgxDSN() + "&default_query_exec_mode=exec", 1},
		{"PgBouncer with the key", bouncer.PgxDSN() + "&respool_pgbouncer=transaction", 0},
		{"PostgreSQL", pg.PgxDSN(), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cfg, err := respool.ParseDSN(tt.dsn)
			if err != nil {
				t.Fatal(err)
			}
			out, err := os.CreateTemp(t.TempDir(), "log") // each Write one system call: safe from the pool's goroutines
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cfg.Pool.Logger = slog.New(slog.NewTextHandler(out, nil))
			cfg.Pool.MaxObjects = 4
			c, err := respool.NewConnector(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			var held []*sql.Conn
			for range 4 { // four connections at once: four made
				conn, err := db.Conn(ctx)
				if err == nil {
					err = conn.PingContext(ctx)
				}
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, conn)
			}
			for _, conn := range held {
				_ = conn.Close()
			}
			logged, err := os.ReadFile(out.Name()) // the line is written before the connection is handed out
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(string(logged), "respool_pgbouncer=transaction"); got != tt.want ||
				tt.want > 0 && !strings.Contains(string(logged), "level=WARN") {
				t.Errorf("%d Warn lines naming respool_pgbouncer; want %d:\n%s", got, tt.want, logged)
			}
		})
	}
}
