package chaos_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	_ "github.com/respool/respool" // registers "respool"
	"github.com/respool/respool/chaos"
	"github.com/respool/respool/resilience/dbclass"
)

func ExampleParseDSN() {
	cfg, err := chaos.ParseDSN("postgres://app:pw@db/app?sslmode=disable" +
		"&chaos_error=40001&chaos_error_rate=0.1&chaos_drop=after&chaos_drop_every=100&chaos_seed=7")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.DriverName, cfg.DSN, "seed", cfg.Seed)
	for _, f := range cfg.Faults {
		fmt.Printf("%s (%v): rate %v, every %d, error %v, after sending %v\n", f.Name, f.Kind, f.Rate, f.Every, f.Err, f.AfterSend)
	}
	// Output:
	// pgx postgres://app:pw@db/app?sslmode=disable seed 7
	// drop (drop): rate 0, every 100, error <nil>, after sending true
	// error (error): rate 0.1, every 0, error ERROR: could not serialize access due to concurrent update (SQLSTATE 40001), after sending false
}

// A server that is full refuses every other connection attempt: pgx
// returns the server's error inside its *pgconn.ConnectError, as for a real
// server, and resilience/dbclass reads it as back-pressure. The first
// attempt is refused by the real closed port.
func ExampleNewConnector() {
	c, err := chaos.NewConnector(chaos.Config{
		DriverName: "pgx",
		DSN:        "postgres://app:pw@127.0.0.1:1/app?sslmode=disable",
		Faults: []chaos.Fault{
			{Kind: chaos.KindError, On: chaos.OpConnect, Err: chaos.PgError("53300"), Every: 2},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	db := sql.OpenDB(c)
	defer db.Close()
	for range 2 {
		err := db.PingContext(context.Background())
		var connectErr *pgconn.ConnectError
		fmt.Println(errors.As(err, &connectErr), errors.Is(err, syscall.ECONNREFUSED), dbclass.Classify(err).Class)
	}
	fmt.Println("injected:", c.Stats().Faults["error"].Injected)
	// Output:
	// true true connection
	// true false back-pressure
	// injected: 1
}

// respool's driver wraps chaos, which wraps pgx: respool's pool meets the
// faults as it would meet a real server's. Lookup finds the Connector that
// database/sql made, to switch a fault at run time.
func ExampleLookup() {
	db, err := sql.Open("respool", "postgres://app:pw@127.0.0.1:1/app?sslmode=disable"+
		"&respool_driver=chaos&chaos_name=orders&chaos_connect_error=57P03&chaos_connect_error_off=true")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	c := chaos.Lookup("orders")
	if err := c.Enable("connect_error"); err != nil {
		fmt.Println(err)
		return
	}
	err = db.PingContext(context.Background())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		fmt.Println(pgErr.Code, dbclass.Classify(err).Class)
	}
	fmt.Println("injected:", c.Stats().Faults["connect_error"].Injected)
	// Output:
	// 57P03 back-pressure
	// injected: 1
}
