// Command demo shows, in about twenty seconds, what respool adds to a
// database/sql program. It opens sql.Open("respool", …) over an embedded
// SQLite database (or the PostgreSQL or MySQL server whose DSN it is given),
// and, live:
//
//  1. runs a concurrent workload and shows the pool's stats and its
//     acquire-wait quantiles;
//  2. sends a burst larger than the pool and its wait queue: the callers past
//     respool_max_queue are refused at once with pool.ErrQueueFull;
//  3. drops a *sql.Rows without closing it: the garbage collector finds it,
//     respool logs LEAK-DETECTED with the stack that ran the query, closes
//     the connection and frees its slot;
//  4. opens a second pool through the chaos driver (respool_driver=chaos),
//     which injects serialization failures, dropped connections and a
//     two-second outage: transactions the server rolled back are retried
//     (respool.TxRunner), broken connections are replaced, and callers fail
//     fast during the outage instead of hanging; the pool recovers after it.
//
// It checks what it shows and exits with status 1 if any of it did not
// happen.
//
//	go run ./demo                                   # embedded SQLite
//	go run ./demo 'postgres://app:pw@localhost/app' # PostgreSQL
//	go run ./demo 'app:pw@tcp(localhost:3306)/app'  # MySQL or MariaDB
//
// On a terminal it shows a live status line; otherwise (or with -plain) it
// prints plain lines.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/term"
)

func main() {
	plain := flag.Bool("plain", false, "print plain lines even on a terminal")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: demo [-plain] [DSN]\n\n"+
			"With no DSN, the demo runs on an embedded SQLite database in a temporary directory.\n"+
			"A DSN is a PostgreSQL (postgres://… or key=value) or MySQL (user:pw@tcp(host:port)/db) one;\n"+
			"the demo creates and drops a table named %s in it.\n\n", tableName)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := defaultOptions()
	opts.DSN = flag.Arg(0)
	opts.Out = os.Stdout
	opts.Live = !*plain && term.IsTerminal(int(os.Stdout.Fd()))
	if err := run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
