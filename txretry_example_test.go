package respool_test

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool"
	"github.com/respool/respool/resilience/retry"
)

// A transfer between two accounts in a serializable transaction: when
// PostgreSQL rolls it back over a conflict with a concurrent transfer
// (40001), RunInTx runs the whole function again. When the connection
// breaks after COMMIT was sent, nobody knows whether the transfer happened:
// RunInTx does not run it again and says so.
func ExampleRunInTx() {
	db, err := sql.Open("respool", "postgres://app:s3cret@db.example.com/bank?respool_max_conns=10")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	err = respool.RunInTx(ctx, db, &sql.TxOptions{Isolation: sql.LevelSerializable}, func(tx *sql.Tx) error {
		var balance int64
		if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = $1", 1).Scan(&balance); err != nil {
			return err
		}
		if balance < 100 {
			return errors.New("insufficient funds") // the caller's error: not retried
		}
		if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance - 100 WHERE id = $1", 1); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + 100 WHERE id = $1", 2)
		return err
	})
	switch {
	case errors.Is(err, respool.ErrTxOutcomeUnknown):
		log.Printf("the transfer may or may not have happened: look it up before trying again: %v", err)
	case err != nil:
		log.Printf("the transfer did not happen: %v", err)
	}
}

// Native pgx (a *pgx.Conn, *pgxpool.Pool or *pgxpool.Conn), with attempts
// and delays of one's own.
func ExampleTxRunner_RunInPgxTx() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://app:s3cret@db.example.com/bank")
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close(context.Background())

	runner, err := respool.NewTxRunner(retry.Config[struct{}]{MaxAttempts: 10})
	if err != nil {
		log.Fatal(err)
	}
	err = runner.RunInPgxTx(ctx, conn, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE stock SET reserved = reserved + 1 WHERE sku = $1", "A-1")
		return err
	})
	if err != nil {
		log.Print(err)
	}
}
