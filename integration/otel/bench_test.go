package otel

import (
	"context"
	"database/sql"
	"testing"

	"github.com/XSAM/otelsql"
	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/respool/respool"
	"github.com/respool/respool/health"
	respoolotel "github.com/respool/respool/otel"
)

// benchConns is every client's pool size in BenchmarkSelect1.
const benchConns = 4

// BenchmarkSelect1 runs SELECT 1 on PostgreSQL through each client with
// its OpenTelemetry metrics recorded by the SDK (metrics=on) or not
// (metrics=off), in one run: respool with module otel; pgx stdlib under
// database/sql with XSAM/otelsql (its statement metrics and
// RegisterDBStatsMetrics; no spans: a no-op TracerProvider); pgxpool with
// exaring/otelpgx (its tracer's query metrics and RecordStats; no spans).
// Compare with benchstat:
//
//	cd integration && go test -run '^$' -bench Select1 -count 10 ./otel/ | tee select1.txt
//	benchstat -col /metrics select1.txt
func BenchmarkSelect1(b *testing.B) {
	for _, client := range []string{"respool", "pgx-stdlib+otelsql", "pgxpool+otelpgx"} {
		for _, on := range []bool{false, true} {
			name := "client=" + client + "/metrics=off"
			if on {
				name = "client=" + client + "/metrics=on"
			}
			b.Run(name, func(b *testing.B) {
				var mp metric.MeterProvider // used when on
				if on {
					sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
					defer sdk.Shutdown(context.Background())
					mp = sdk
				}
				query := openClient(b, client, on, mp)
				query() // the connections opened before the clock starts
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						query()
					}
				})
			})
		}
	}
}

// openClient opens client with its instrumentation on mp when on, and
// returns its SELECT 1; the client is closed when b ends.
func openClient(b *testing.B, client string, on bool, mp metric.MeterProvider) func() {
	ctx := context.Background()
	scan := func(row interface{ Scan(...any) error }) {
		var n int
		if err := row.Scan(&n); err != nil {
			b.Error(err)
		}
	}
	switch client {
	case "respool":
		db, c, err := respool.OpenDB(pg.DSN() + "&respool_max_conns=4")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		if on {
			stop, err := respoolotel.Instrument("bench", health.FromConnector(c, db.PingContext), respoolotel.Config{MeterProvider: mp})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = stop() })
		}
		return func() { scan(db.QueryRowContext(ctx, "SELECT 1")) }
	case "pgx-stdlib+otelsql":
		var db *sql.DB
		var err error
		if on {
			db, err = otelsql.Open("pgx", pg.DSN(), otelsql.WithMeterProvider(mp), otelsql.WithTracerProvider(noop.NewTracerProvider()))
			if err == nil {
				_, err = otelsql.RegisterDBStatsMetrics(db, otelsql.WithMeterProvider(mp))
			}
		} else {
			db, err = sql.Open("pgx", pg.DSN())
		}
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(benchConns)
		db.SetMaxIdleConns(benchConns)
		b.Cleanup(func() { db.Close() })
		return func() { scan(db.QueryRowContext(ctx, "SELECT 1")) }
	default: // pgxpool+otelpgx
		cfg, err := pgxpool.ParseConfig(pg.DSN())
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns = benchConns
		if on {
			cfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithMeterProvider(mp), otelpgx.WithTracerProvider(noop.NewTracerProvider()))
		}
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		if on {
			if err := otelpgx.RecordStats(p, otelpgx.WithStatsMeterProvider(mp)); err != nil {
				b.Fatal(err)
			}
		}
		return func() { scan(p.QueryRow(ctx, "SELECT 1")) }
	}
}
