package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/respool/respool/chaos"
	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/integration/servers"
)

var pg, maria *servers.Server

func TestMain(m *testing.M) {
	// go-sql-driver/mysql logs each connection it loses; the tests lose
	// them on purpose.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	goleak.VerifyTestMain(servers.WithServers(m, func(p, mdb *servers.Server) { pg, maria = p, mdb }))
}

// testTimeout bounds every test: each stops by itself well within it.
const testTimeout = 60 * time.Second

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// eachServer runs fn as a subtest against PostgreSQL and MariaDB.
func eachServer(t *testing.T, fn func(t *testing.T, s *servers.Server)) {
	for _, s := range []*servers.Server{pg, maria} {
		t.Run(s.Kind, func(t *testing.T) { fn(t, s) })
	}
}

// plainDB opens the server's own driver on s, closed when the test ends.
func plainDB(t *testing.T, s *servers.Server) *sql.DB {
	t.Helper()
	return servers.OpenDB(t, s.DriverName(), s.DSN())
}

// chaosDB opens chaos with faults over s's own driver and DSN, closed when
// the test ends.
func chaosDB(t *testing.T, s *servers.Server, faults ...chaos.Fault) (*sql.DB, *chaos.Connector) {
	t.Helper()
	return chaosDBConfig(t, chaos.Config{DriverName: s.DriverName(), DSN: s.DSN(), Faults: faults})
}

func chaosDBConfig(t *testing.T, cfg chaos.Config) (*sql.DB, *chaos.Connector) {
	t.Helper()
	c, err := chaos.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c
}

// chain lists the types along err's chain (the first error of a join).
func chain(err error) string {
	var parts []string
	for e := err; e != nil; {
		parts = append(parts, fmt.Sprintf("%T", e))
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				e = es[0]
				continue
			}
		}
		e = errors.Unwrap(e)
	}
	return strings.Join(parts, " > ")
}

// same checks that injected is the error the caller got for the real
// fault: the same types along the chain and the same verdict of dbguard
// (class, code, nothing sent, timeout, cancelled, pause).
func same(t *testing.T, real, injected error) {
	t.Helper()
	if real == nil || injected == nil {
		t.Fatalf("real %v, injected %v: want two errors", real, injected)
	}
	rv, iv := dbguard.Classify(real), dbguard.Classify(injected)
	t.Logf("real     %q: %s: %v", real, chain(real), rv)
	t.Logf("injected %q: %s: %v", injected, chain(injected), iv)
	if rv != iv {
		t.Errorf("dbguard: real %+v, injected %+v", rv, iv)
	}
	if rc, ic := chain(real), chain(injected); rc != ic {
		t.Errorf("types: real %s, injected %s", rc, ic)
	}
	for _, err := range []error{real, injected} {
		if strings.Contains(err.Error(), servers.DefaultPassword) {
			t.Errorf("%q shows the password", err)
		}
	}
}

// proxied starts a proxy in front of s, closed when the test ends, and
// returns it with the server as reached through it.
func proxied(t *testing.T, s *servers.Server) (*servers.Proxy, *servers.Server) {
	t.Helper()
	p, err := servers.StartProxy(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, p.Server(s)
}
