package sqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	_ "github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
)

// sqlPools are the database/sql pools the benchmarks compare: respool's
// driver as sql.Open makes it (its resilience wiring on), the same with
// every resilience key off (what the wiring costs the success path), the
// same recording leak stacks, and pgx's stdlib driver.
var sqlPools = []struct{ name, driver, keys string }{
	{"respool", "respool", "respool_max_conns=8"},
	{"respool-unguarded", "respool", "respool_max_conns=8&respool_breaker=off&respool_retry_connect=1&respool_pause=off&respool_back_pressure=off"},
	{"respool-stack", "respool", "respool_max_conns=8&respool_leak_stack=true"},
	{"pgx-stdlib", "pgx", ""},
}

// BenchmarkSelect1 runs SELECT 1 on the same PostgreSQL server through
// respool's database/sql driver, through database/sql with pgx's stdlib
// driver, and through pgxpool, in one run: serially (the pool's cost next to
// one round trip) and from 8 goroutines on 8 connections.
func BenchmarkSelect1(b *testing.B) {
	ctx := context.Background()
	const conns = 8
	for _, mode := range []string{"serial", "parallel"} {
		for _, sp := range sqlPools {
			b.Run(mode+"/pool="+sp.name, func(b *testing.B) {
				dsn := pg.DSN()
				if sp.keys != "" {
					dsn = withKeys(pg, sp.keys)
				}
				db, err := sql.Open(sp.driver, dsn)
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				db.SetMaxOpenConns(conns)
				db.SetMaxIdleConns(conns)
				runSelect1(b, mode, func() error {
					var n int
					return db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
				})
			})
		}
		b.Run(mode+"/pool=pgxpool", func(b *testing.B) {
			cfg, err := pgxpool.ParseConfig(pg.DSN())
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxConns = conns
			p, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			runSelect1(b, mode, func() error {
				var n int
				return p.QueryRow(ctx, "SELECT 1").Scan(&n)
			})
		})
	}
}

func runSelect1(b *testing.B, mode string, query func() error) {
	// Warm up from 8 goroutines, so that the connections exist before timing.
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for range 4 {
				if e := query(); e != nil {
					err = e
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	if mode == "serial" {
		for b.Loop() {
			if err := query(); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := query(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPrepared runs one db.Prepare'd statement with an argument on
// PostgreSQL and MariaDB, through respool's driver (as sql.Open makes it) and
// through the plain driver, in one run: serially and from 8 goroutines on 8
// connections. database/sql's own idle list is as large as the pool, so that
// the plain drivers keep their connections (and statements) too.
func BenchmarkPrepared(b *testing.B) {
	ctx := context.Background()
	const conns = 8
	for _, mode := range []string{"serial", "parallel"} {
		for _, s := range []*servers.Server{pg, maria} {
			for _, name := range []string{"respool", s.DriverName()} {
				b.Run(mode+"/"+s.Kind+"/pool="+name, func(b *testing.B) {
					dsn, drv := s.DSN(), s.DriverName()
					if name == "respool" {
						dsn, drv = withKeys(s, fmt.Sprintf("respool_max_conns=%d", conns)), "respool"
					}
					db, err := sql.Open(drv, dsn)
					if err != nil {
						b.Fatal(err)
					}
					defer db.Close()
					db.SetMaxOpenConns(conns)
					db.SetMaxIdleConns(conns)
					stmt, err := db.PrepareContext(ctx, "SELECT "+placeholder(s, 1)+" + 1")
					if err != nil {
						b.Fatal(err)
					}
					defer stmt.Close()
					runSelect1(b, mode, func() error {
						var n int
						return stmt.QueryRowContext(ctx, 41).Scan(&n)
					})
				})
			}
		}
	}
}
