package respool

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"testing"
	"time"
)

// A program whose one connection attempt fails gets the error, and the pool
// logs nothing at Info or above: a command-line program printed each failed
// attempt twice, a "WARN create failed" line on slog.Default, then its own
// error. (The pool's log says so once the failures persist: pool
// TestCreateFailureTheCallerGetsIsNotLoggedAtWarn.)
func TestFailedConnectTheCallerGetsIsNotLoggedTwice(t *testing.T) {
	logs := &syncWriter{w: new(bytes.Buffer)}
	pingClosedPort(t, "", slog.New(slog.NewTextHandler(logs, nil)))
	if s := logs.String(); s != "" {
		t.Errorf("the pool logged what its caller got:\n%s", s)
	}
}

// pingClosedPort returns a Connector of pgx (the password pwMark) on a
// loopback port where nothing listens, with the DSN's query keys and
// logger, after a Ping of it failed.
func pingClosedPort(t *testing.T, keys string, logger *slog.Logger) *Connector {
	t.Helper()
	cfg, err := ParseDSN("postgres://app:" + pwMark + "@" + closedAddr(t) + "/app?sslmode=disable" + keys)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pool.Logger = logger
	c, err := NewConnector(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("Ping of a closed port: no error")
	}
	return c
}
