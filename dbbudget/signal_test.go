package dbbudget_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/dbbudget"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/logtest"
	"github.com/respool/respool/resilience"
)

// A bad ShareConfig is refused by Share, each bad field named with what is
// accepted (a MySQL DSN: no LISTEN/NOTIFY), the password in no error;
// Share leaves the dbguard.Config alone then, refuses one it has joined
// already, and dials nothing itself.
func TestShareRefusesABadConfig(t *testing.T) {
	const secret = "S3cretPw-xyz"
	const dsn = "postgres://u:" + secret + "@127.0.0.1:1/db"
	for _, c := range []struct {
		cfg   dbbudget.ShareConfig
		field string // "": not a ConfigError
	}{
		{dbbudget.ShareConfig{Name: "n"}, "DSN"},
		{dbbudget.ShareConfig{DSN: dsn}, "Name"},
		{dbbudget.ShareConfig{DSN: dsn, Name: "n", Timeout: -time.Second}, "Timeout"},
		{dbbudget.ShareConfig{DSN: "u:" + secret + "@tcp(127.0.0.1:1)/db", Name: "n"}, "DSN"},
		{dbbudget.ShareConfig{DSN: dsn + "?sslmode=nonsense", Name: "n"}, ""},
	} {
		var gc dbguard.Config
		err := dbbudget.Share(&gc, c.cfg)
		var ce *resilience.ConfigError
		switch {
		case err == nil:
			t.Errorf("%s: Share accepted it", c.cfg.DSN)
		case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field):
			t.Errorf("%s: %v; want a ConfigError naming %s", c.cfg.DSN, err, c.field)
		case strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), secret):
			t.Errorf("the error shows the password: %v", err)
		case gc.Join != nil:
			t.Errorf("%s: Join set on a refusal", c.cfg.DSN)
		}
		if strings.HasPrefix(c.cfg.DSN, "u:") && !strings.Contains(err.Error(), "LISTEN/NOTIFY") {
			t.Errorf("a MySQL DSN: %v; want it to say MySQL has no LISTEN/NOTIFY", err)
		}
	}
	var gc dbguard.Config
	cfg := dbbudget.ShareConfig{DSN: dsn, Name: "n"}
	if err := dbbudget.Share(&gc, cfg); err != nil || gc.Join == nil {
		t.Fatalf("Share: %v, Join set %v; want Join set", err, gc.Join != nil)
	}
	if err := dbbudget.Share(&gc, cfg); err == nil || !strings.Contains(err.Error(), "Join") {
		t.Fatalf("Share of a Config joined already: %v; want an error naming Join", err)
	}
}

// A server that closes every connection at once: the Guard's session is
// dialed again and again in the background (New does not wait), the loss
// logged once for the whole run, the password in no line; Close stops the
// dialing, within a second (goleak checks that nothing is left).
func TestAFailingSessionIsDialedAgainLoggedOnceAndStoppedByClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 16)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	defer func() { ln.Close(); wg.Wait() }()

	const secret = "S3cretPw-xyz"
	var logged logtest.Buffer
	gc := dbguard.Config{}
	if err := dbbudget.Share(&gc, dbbudget.ShareConfig{DSN: "postgres://u:" + secret + "@" + ln.Addr().String() + "/db?sslmode=disable",
		Name: "n", Logger: slog.New(slog.NewTextHandler(&logged, nil))}); err != nil {
		t.Fatal(err)
	}
	g, err := dbguard.New(gc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		select {
		case <-accepted:
		case <-time.After(10 * time.Second):
			g.Close()
			t.Fatalf("%d dials of the session within 10s; want 3 (again after a backoff of at most 2s)", i)
		}
	}
	start := time.Now()
	g.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v; want at most 1s", d)
	}
	out := logged.String()
	if n := strings.Count(out, "session of the signals is lost"); n != 1 || strings.Contains(out, secret) {
		t.Errorf("logged %d loss lines for 3 failed dials (want 1), password shown: %v:\n%s", n, strings.Contains(out, secret), out)
	}
}
