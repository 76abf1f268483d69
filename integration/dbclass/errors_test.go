package dbclass

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
)

func TestDialClosedPort(t *testing.T) {
	ctx := ctxT(t)
	addr := servers.ClosedAddr(t)
	t.Run("pgx", func(t *testing.T) {
		_, err := pgx.Connect(ctx, "postgres://respool@"+addr+"/respool?sslmode=disable")
		v := expect(t, err, dbguard.ClassConnection, "")
		if !v.NothingSent || !v.IsFailure() || !v.IsConnectRetryable() {
			t.Errorf("%v: want nothing sent, a breaker failure, retryable", v)
		}
	})
	t.Run("mysql", func(t *testing.T) {
		err := servers.OpenDB(t, "mysql", mysqlDSN(addr, servers.DefaultUser, servers.DefaultPassword, servers.DefaultDatabase)).PingContext(ctx)
		v := expect(t, err, dbguard.ClassConnection, "")
		if !v.NothingSent || !v.IsFailure() || !v.IsConnectRetryable() {
			t.Errorf("%v: want nothing sent, a breaker failure, retryable", v)
		}
	})
}

func TestSyntaxErrorAndUniqueViolation(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db := serverDB(t, s)
		syntaxCode, uniqueCode := "42601", "23505"
		if s.Kind == servers.KindMariaDB {
			syntaxCode, uniqueCode = "1064", "1062"
		}
		_, err := db.ExecContext(ctx, "SELEC 1")
		if v := expect(t, err, dbguard.ClassCaller, syntaxCode); v.IsFailure() {
			t.Errorf("a syntax error counts for the breaker: %v", v)
		}

		servers.MustExec(t, ctx, db, "DROP TABLE IF EXISTS dbclass_unique", "CREATE TABLE dbclass_unique (k INT PRIMARY KEY)",
			"INSERT INTO dbclass_unique VALUES (1)")
		t.Cleanup(func() { db.ExecContext(context.Background(), "DROP TABLE dbclass_unique") })
		_, err = db.ExecContext(ctx, "INSERT INTO dbclass_unique VALUES (1)")
		if v := expect(t, err, dbguard.ClassCaller, uniqueCode); v.IsFailure() || v.IsTxRetryable() {
			t.Errorf("a unique violation counts for the breaker or a retry: %v", v)
		}
	})
}

// twoRowTable creates a table with rows k=1 and k=2, dropped at the end.
func twoRowTable(t *testing.T, ctx context.Context, db *sql.DB, name string) {
	t.Helper()
	servers.MustExec(t, ctx, db, "DROP TABLE IF EXISTS "+name, "CREATE TABLE "+name+" (k INT PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO "+name+" VALUES (1, 0), (2, 0)")
	t.Cleanup(func() { db.ExecContext(context.Background(), "DROP TABLE "+name) })
}

// TestSerializationFailure runs the classic write skew: two serializable
// transactions each read both rows and update a different one; the second
// to commit fails with 40001.
func TestSerializationFailure(t *testing.T) {
	ctx := ctxT(t)
	db := serverDB(t, pg)
	twoRowTable(t, ctx, db, "dbclass_skew")
	serializable := &sql.TxOptions{Isolation: sql.LevelSerializable}
	tx1, err := db.BeginTx(ctx, serializable)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	tx2, err := db.BeginTx(ctx, serializable)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()
	var sum int
	for _, tx := range []*sql.Tx{tx1, tx2} {
		if err := tx.QueryRowContext(ctx, "SELECT sum(v) FROM dbclass_skew").Scan(&sum); err != nil {
			t.Fatal(err)
		}
	}
	servers.MustExec(t, ctx, tx1, "UPDATE dbclass_skew SET v = v + 1 WHERE k = 1")
	servers.MustExec(t, ctx, tx2, "UPDATE dbclass_skew SET v = v + 1 WHERE k = 2")
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	err = tx2.Commit()
	if v := expect(t, err, dbguard.ClassTxRetryable, "40001"); !v.IsTxRetryable() || v.IsFailure() || v.IsConnectRetryable() {
		t.Errorf("%v: want a transaction retry only", v)
	}
}

// TestDeadlock makes two transactions lock rows 1 and 2, then each the
// other's row. The cycle forms whichever update comes second, so the two
// run concurrently without ordering; the server picks one victim.
func TestDeadlock(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db := serverDB(t, s)
		twoRowTable(t, ctx, db, "dbclass_deadlock")
		want := "1213"
		var setup []string
		if s.Kind == servers.KindPostgres {
			want = "40P01"
			setup = []string{"SET LOCAL deadlock_timeout = '50ms'"} // the default 1s would only slow the test
		}
		txs := make([]*sql.Tx, 2)
		for i := range txs {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			servers.MustExec(t, ctx, tx, setup...)
			servers.MustExec(t, ctx, tx, fmt.Sprintf("UPDATE dbclass_deadlock SET v = v + 1 WHERE k = %d", i+1))
			txs[i] = tx
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, tx := range txs {
			wg.Go(func() {
				_, errs[i] = tx.ExecContext(ctx, fmt.Sprintf("UPDATE dbclass_deadlock SET v = v + 1 WHERE k = %d", 2-i))
				if errs[i] != nil {
					tx.Rollback() // release the victim's locks at once
				}
			})
		}
		wg.Wait()
		victim := errors.Join(errs...)
		if errs[0] != nil && errs[1] != nil {
			t.Fatalf("both transactions failed: %v", victim)
		}
		if v := expect(t, victim, dbguard.ClassTxRetryable, want); !v.IsTxRetryable() {
			t.Errorf("%v: not retryable as a transaction", v)
		}
	})
}

// TestLockNotAvailable: NOWAIT on a row another transaction holds.
func TestLockNotAvailable(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		db := serverDB(t, s)
		twoRowTable(t, ctx, db, "dbclass_nowait")
		want := "55P03"
		if s.Kind == servers.KindMariaDB {
			want = "1205"
		}
		holder, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Rollback()
		servers.MustExec(t, ctx, holder, "SELECT v FROM dbclass_nowait WHERE k = 1 FOR UPDATE")
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		_, err = tx.ExecContext(ctx, "SELECT v FROM dbclass_nowait WHERE k = 1 FOR UPDATE NOWAIT")
		expect(t, err, dbguard.ClassTxRetryable, want)
	})
}
