// Command txretry retries a whole transaction when the database answers
// with a serialization failure (SQLSTATE 40001), as PostgreSQL does under
// SERIALIZABLE or MySQL with a deadlock (1213): roll back, wait a little,
// run the transaction again from its first statement. respool's
// TxRunner (respool.RunInTx with its defaults) does it: dbguard
// says which errors are worth it (IsTxRetryable), and a COMMIT whose outcome
// is unknown is never run again (*respool.TxOutcomeUnknownError).
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

	"github.com/respool/respool"
	_ "github.com/respool/respool/chaos" // registers "chaos"
	"github.com/respool/respool/resilience"
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

	// Each retry is a conflict met: the transaction was rolled back and
	// runs again from its start.
	var conflicts, committed atomic.Int64
	txs, err := respool.NewTxRunner(retry.Config[struct{}]{
		MaxAttempts: 10,
		Delay:       delay.Strategy{Kind: delay.Exponential, Initial: 2 * time.Millisecond, Max: 50 * time.Millisecond, Jitter: delay.Full},
		Listener: func(e resilience.Event) {
			if e.Kind == resilience.EventRetry {
				conflicts.Add(1)
			}
		},
	})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var failures []error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range transfers {
				from, to := (w+i)%accounts, (w+i+1)%accounts
				err := txs.RunInTx(ctx, flaky, nil, func(tx *sql.Tx) error {
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
	fmt.Fprintf(out, "%d transfers committed, %d failed; %d serialization failures (40001) met, each retried\n",
		committed.Load(), len(failures), conflicts.Load())
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
