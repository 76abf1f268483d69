package respool_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/respool/respool"
	"github.com/respool/respool/clock/clocktest"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/health"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
)

// quiet drops the Connectors' log lines (the circuit opening and closing,
// sqlmock's unexpected Close).
var quiet = slog.New(slog.DiscardHandler)

// TestFromConnectorFollowsTheBreaker checks the health Source of a
// Connector (health.FromConnector reads its Stats, Breaker and Pause): ready while its queries succeed, not ready (with the breaker's
// half-open time) once lost connections opened its circuit, and ready again
// after the open delay, when the readiness ping, admitted as the half-open
// trial, closes the circuit. The server is a sqlmock (its pings succeed);
// the breaker runs on a virtual clock.
func TestFromConnectorFollowsTheBreaker(t *testing.T) {
	const openDelay = time.Minute
	const dsn = "health-from-connector"
	mock, m, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		t.Fatal(err)
	}
	defer mock.Close()
	const maxFailures = 8 // more than the window: the circuit opens before
	for range maxFailures {
		m.ExpectQuery("SELECT 1").WillReturnError(io.ErrUnexpectedEOF)
	}
	clk := clocktest.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := respool.NewConnector(respool.Config{DriverName: "sqlmock", DSN: dsn,
		Pool: pool.Config{Name: "orders", MaxObjects: 2, Logger: quiet},
		Resilience: dbguard.Config{Clock: clk,
			Breaker: dbguard.BreakerConfig{WindowSize: 4, MinimumCalls: 4, OpenDelay: openDelay}}})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()

	checker, err := health.New(health.Config{ProbeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := checker.Add("orders", health.FromConnector(c, db.PingContext)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r := checker.Ready(ctx); !r.Ready {
		t.Fatalf("before the outage: %+v; want ready", r)
	}

	opened := false
	for range maxFailures {
		err := db.QueryRowContext(ctx, "SELECT 1").Scan(new(int))
		if errors.Is(err, breaker.ErrOpen) {
			opened = true
			break
		}
	}
	if !opened {
		t.Fatalf("the circuit did not open after %d lost connections: %+v", maxFailures, c.ResilienceStats().Breaker)
	}
	r := checker.Ready(ctx)
	want := clk.Now().Add(openDelay)
	if r.Ready || !strings.HasPrefix(r.Pools[0].Reason, "circuit breaker open") || !r.Pools[0].RetryAt.Equal(want) {
		t.Fatalf("circuit open: %+v; want not ready, the breaker open until %v", r, want)
	}
	if rep := checker.Report().Pools[0]; rep.Breaker == nil || rep.Breaker.State != breaker.Open {
		t.Fatalf("report's breaker: %+v; want open", rep.Breaker)
	}

	clk.Advance(openDelay) // half-open: the next call is the trial
	if r := checker.Ready(ctx); !r.Ready {
		t.Fatalf("after the open delay: %+v; want ready, the ping closing the circuit", r)
	}
	if st := c.Breaker().State(); st != breaker.Closed {
		t.Fatalf("breaker %v after the readiness ping; want closed", st)
	}
}

// TestFromConnectorWithoutResilience checks that a Connector whose breaker
// and pause are off gives a Source without them, and that a nil ping gives
// no Probe (a Connector's connections are database/sql's to take).
func TestFromConnectorWithoutResilience(t *testing.T) {
	const dsn = "health-from-connector-plain"
	mock, _, err := sqlmock.NewWithDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer mock.Close()
	c, err := respool.NewConnector(respool.Config{DriverName: "sqlmock", DSN: dsn, Pool: pool.Config{Logger: quiet},
		Resilience: dbguard.Config{Breaker: dbguard.BreakerConfig{Disabled: true}, Pause: dbguard.PauseConfig{Disabled: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := health.FromConnector(c, nil)
	if src.Breaker != nil || src.Pause != nil || src.Probe != nil || src.Stats == nil {
		t.Fatalf("Source %+v; want the Connector's Stats, no breaker, no pause, no probe", src)
	}
}
