package otel

import (
	"context"
	"database/sql"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/respool/respool"
	"github.com/respool/respool/health"
	respoolotel "github.com/respool/respool/otel"
)

// BenchmarkSelect1 runs SELECT 1 through respool on PostgreSQL with the
// pool's OpenTelemetry metrics recorded by the SDK (on) or not (off), in
// one run: compare them with benchstat.
//
//	cd integration && go test -run '^$' -bench Select1 -count 10 ./otel/ | tee select1.txt
func BenchmarkSelect1(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "metrics=off"
		if on {
			name = "metrics=on"
		}
		b.Run(name, func(b *testing.B) {
			db, c, err := respool.OpenDB(pg.DSN() + "&respool_max_conns=4")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if on {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer mp.Shutdown(context.Background())
				stop, err := respoolotel.Instrument("bench", health.FromConnector(c, db.PingContext), respoolotel.Config{MeterProvider: mp})
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
			}
			select1(b, db) // the connections opened before the clock starts
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					select1(b, db)
				}
			})
		})
	}
}

func select1(b *testing.B, db *sql.DB) {
	var n int
	if err := db.QueryRowContext(context.Background(), "SELECT 1").Scan(&n); err != nil {
		b.Error(err)
	}
}
