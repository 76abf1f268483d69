package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool"
	"github.com/respool/respool/health"
	"github.com/respool/respool/integration/servers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type readiness struct {
	Ready bool `json:"ready"`
	Pools []struct {
		Name   string `json:"name"`
		Ready  bool   `json:"ready"`
		Reason string `json:"reason"`
	} `json:"pools"`
}

func ready(t *testing.T, url string) (int, readiness) {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, r
}

// Readiness follows the server: ready while it runs, not ready (503, naming
// the connection error, without the password) once it is killed, ready
// again once it is back; liveness stays 200 throughout.
func TestReadinessFollowsTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := servers.StartPostgres(ctx, servers.Local())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pg.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	db, c, err := respool.OpenDB(pg.DSN() + "&respool_name=orders&respool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	checker, err := health.New(health.Config{ProbeTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The pool's own reason ("refused"), not the breaker's: no FromConnector.
	src := health.Source{Stats: c.Stats, Probe: db.PingContext} // a query's round trip: an idle connection to a dead server fails it
	if err := checker.Add(c.Name(), src); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(checker.Handler())
	defer srv.Close()

	if code, r := ready(t, srv.URL); code != http.StatusOK || !r.Ready || r.Pools[0].Name != "orders" {
		t.Fatalf("server up: %d %+v, want 200 ready", code, r)
	}
	if err := pg.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	code, r := ready(t, srv.URL)
	if code != http.StatusServiceUnavailable || r.Ready || len(r.Pools) != 1 || r.Pools[0].Reason == "" {
		t.Fatalf("server killed: %d %+v, want 503 with a reason", code, r)
	}
	if strings.Contains(r.Pools[0].Reason, pg.Password) {
		t.Fatalf("readiness shows the password: %q", r.Pools[0].Reason)
	}
	t.Logf("not ready: %s", r.Pools[0].Reason)
	// The idle connections found dead, the next probe needs a new one.
	if code, r := ready(t, srv.URL); code != http.StatusServiceUnavailable || !strings.Contains(r.Pools[0].Reason, "refused") {
		t.Fatalf("server still down: %d %+v, want 503, connection refused", code, r)
	}
	resp, err := http.Get(srv.URL + "/livez")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("server killed: /livez %d, want 200", resp.StatusCode)
	}
	rep := checker.Report().Pools[0]
	if rep.CreateFailures == 0 || rep.LastCreateError == "" || strings.Contains(rep.LastCreateError, pg.Password) {
		t.Fatalf("report while down: %d failures, last %q; want the failure, redacted", rep.CreateFailures, rep.LastCreateError)
	}

	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if code, r := ready(t, srv.URL); code != http.StatusOK || !r.Ready {
		t.Fatalf("server back: %d %+v, want 200 ready", code, r)
	}
}
