// Command txretry retries a whole transaction when the database answers
// with a serialization failure (SQLSTATE 40001), as PostgreSQL does under
// SERIALIZABLE or MySQL with a deadlock (1213): roll back, wait a little,
// run the transaction again from its first statement. resilience/dbclass
// says which errors are worth it (IsTxRetryable) and resilience/retry runs
// the attempts.
//
// The database is an embedded SQLite (modernc.org/sqlite) under respool,
// seen through the chaos driver, which fails every tenth statement with
// PostgreSQL's 40001. Money moves between accounts; at the end the total is
// what it was and every transfer is in the ledger exactly once.
//
//	go run ./txretry
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/respool/respool/chaos"  // registers "chaos"
	_ "github.com/respool/respool/driver" // registers "respool"
	"github.com/respool/respool/resilience/dbclass"
	"github.com/respool/respool/resilience/delay"
	"github.com/respool/respool/resilience/retry"
	_ "modernc.org/sqlite" // registers "sqlite"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "txretry:", err)
		os.Exit(1)
	}
}

const (
	accounts  = 10
	balance   = 100 // each account's opening balance
	workers   = 8
	transfers = 10 // per worker
)

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "respool-txretry-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := "file:" + filepath.ToSlash(filepath.Join(dir, "bank.db")) +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_txlock=immediate&respool_max_conns=4"

	// The bank, as it is: set up and checked through a plain pool.
	bank, err := sql.Open("respool", file+"&respool_driver=sqlite&respool_name=bank")
	if err != nil {
		return err
	}
	defer bank.Close()
	if err := setUp(ctx, bank); err != nil {
		return err
	}
	// The same bank through the chaos driver: every tenth statement fails
	// with a serialization failure.
	flaky, err := sql.Open("respool", file+"&respool_driver=chaos&respool_name=flaky"+
		"&chaos_driver=sqlite&chaos_error=pg:40001&chaos_error_every=10&chaos_error_on=exec")
	if err != nil {
		return err
	}
	defer flaky.Close()

	rt, err := retry.New(retry.Config[struct{}]{
		MaxAttempts: 10,
		Delay:       delay.Strategy{Kind: delay.Exponential, Initial: 2 * time.Millisecond, Max: 50 * time.Millisecond, Jitter: delay.Full},
		RetryOn:     dbclass.IsTxRetryable,
	})
	if err != nil {
		return err
	}
	var conflicts, committed atomic.Int64
	var mu sync.Mutex
	var failures []error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range transfers {
				from, to := (w+i)%accounts, (w+i+1)%accounts
				err := inTx(ctx, flaky, rt, &conflicts, func(tx *sql.Tx) error {
					return transfer(ctx, tx, from, to, 1)
				})
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					continue
				}
				committed.Add(1)
			}
		})
	}
	wg.Wait()

	var total, ledger int64
	if err := bank.QueryRowContext(ctx, "SELECT SUM(balance) FROM accounts").Scan(&total); err != nil {
		return err
	}
	if err := bank.QueryRowContext(ctx, "SELECT COUNT(*) FROM ledger").Scan(&ledger); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d transfers committed, %d failed; %d serialization failures (40001) met, %d retries\n",
		committed.Load(), len(failures), conflicts.Load(), rt.Stats().Retries)
	fmt.Fprintf(out, "total balance %d (opening %d); %d ledger entries\n", total, accounts*balance, ledger)
	switch {
	case len(failures) > 0:
		return fmt.Errorf("%d transfers failed (first: %w)", len(failures), failures[0])
	case conflicts.Load() == 0:
		return fmt.Errorf("no serialization failure was met")
	case total != accounts*balance:
		return fmt.Errorf("total balance %d, want %d", total, accounts*balance)
	case ledger != committed.Load():
		return fmt.Errorf("%d ledger entries for %d transfers", ledger, committed.Load())
	}
	return nil
}

// inTx runs fn in a transaction, and runs it again, from the start, when
// the transaction failed in a way the database asks to retry (a
// serialization failure, a deadlock: dbclass.IsTxRetryable), counting those
// in conflicts. Any other error, or one from Commit that is not retryable,
// ends it: a statement that may have taken effect is never repeated.
func inTx(ctx context.Context, db *sql.DB, rt *retry.Retry[struct{}], conflicts *atomic.Int64, fn func(*sql.Tx) error) error {
	_, err := rt.Do(ctx, func(ctx context.Context) (struct{}, error) {
		err := runTx(ctx, db, fn)
		if dbclass.IsTxRetryable(err) {
			conflicts.Add(1)
		}
		return struct{}{}, err
	})
	return err
}

// runTx is one attempt: fn and a commit, or a rollback.
func runTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// transfer moves amount from one account to another and writes it in the
// ledger: three statements, any of which may fail.
func transfer(ctx context.Context, tx *sql.Tx, from, to, amount int) error {
	stmts := []struct {
		q    string
		args []any
	}{
		{"UPDATE accounts SET balance = balance - ? WHERE id = ?", []any{amount, from}},
		{"UPDATE accounts SET balance = balance + ? WHERE id = ?", []any{amount, to}},
		{"INSERT INTO ledger (src, dst, amount) VALUES (?, ?, ?)", []any{from, to, amount}},
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
			return err
		}
	}
	return nil
}

func setUp(ctx context.Context, db *sql.DB) error {
	stmts := []string{
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)",
		"CREATE TABLE ledger (id INTEGER PRIMARY KEY, src INTEGER, dst INTEGER, amount INTEGER)",
	}
	for i := range accounts {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO accounts (id, balance) VALUES (%d, %d)", i, balance))
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}
