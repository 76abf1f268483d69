package chaos

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	_ "github.com/respool/respool" // registers "respool"
	"github.com/respool/respool/chaos"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/resilience/dbclass"
)

// TestSeedRepeatsOnRealServer: the same seed fails the same calls of a
// real server's workload, and a run's failures are the Connector's count.
func TestSeedRepeatsOnRealServer(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		run := func(seed uint64) []int {
			db, c := chaosDBConfig(t, chaos.Config{DriverName: s.DriverName(), DSN: s.DSN(), Seed: seed,
				Faults: []chaos.Fault{{Kind: chaos.KindError, Err: chaos.PgError("40001"), Rate: 0.3}}})
			failed := failedCalls(t, ctx, db, 60)
			if n := c.Stats().Faults["error"].Injected; n != int64(len(failed)) {
				t.Errorf("%d calls failed, %d faults injected", len(failed), n)
			}
			return failed
		}
		first := run(99)
		if again := run(99); !slices.Equal(first, again) || len(first) == 0 {
			t.Fatalf("seed 99 failed calls %v, then %v", first, again)
		}
		if other := run(100); slices.Equal(first, other) {
			t.Errorf("seeds 99 and 100 failed the same calls %v", first)
		}
	})
}

// respoolDSN returns s's DSN for respool's driver over chaos with keys.
func respoolDSN(s *servers.Server, keys string) string {
	return s.DSN() + "&respool_driver=chaos&" + keys
}

// TestRespoolOverChaos: respool's pool over chaos over the real drivers.
// Statements dropped after sending ran on the server and reach respool's
// caller as ambiguous; a server refusing sessions reaches it as
// back-pressure; no error shows the password.
func TestRespoolOverChaos(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		ctx := ctxT(t)
		add, counter := counterTable(t, ctx, s, "chaos_respool")
		name := "TestRespoolOverChaos-" + s.Kind
		db, err := sql.Open("respool", respoolDSN(s, "respool_max_conns=2&chaos_name="+name+
			"&chaos_drop=after&chaos_drop_every=3&chaos_connect_error_off=true&chaos_connect_error="+
			map[string]string{servers.KindPostgres: "53300", servers.KindMariaDB: "1040"}[s.Kind]))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var lost int
		for range 9 {
			_, err := db.ExecContext(ctx, add, 1)
			switch {
			case err == nil:
			case dbclass.Classify(err).Class == dbclass.ClassAmbiguous:
				lost++
			default:
				t.Fatalf("%v: %v", err, dbclass.Classify(err))
			}
		}
		c := chaos.Lookup(name)
		if n := c.Stats().Faults["drop"].Injected; lost != 3 || n != 3 {
			t.Errorf("%d lost connections reported, %d injected; want 3", lost, n)
		}
		if n := counter(); n != 9 {
			t.Errorf("the counter is %d: want 9, every statement ran", n)
		}

		// The pool made a connection for each one lost; now the server is full.
		if err := c.Enable("connect_error"); err != nil {
			t.Fatal(err)
		}
		conns := make([]*sql.Conn, 0, 2)
		defer func() {
			for _, cn := range conns {
				cn.Close()
			}
		}()
		var refused error
		for range 3 {
			cn, err := db.Conn(ctx)
			if err != nil {
				refused = err
				break
			}
			conns = append(conns, cn)
			if err := cn.PingContext(ctx); err != nil {
				refused = err
				break
			}
		}
		var pgErr *pgconn.PgError
		var myErr *mysql.MySQLError
		if !errors.As(refused, &pgErr) && !errors.As(refused, &myErr) || dbclass.Classify(refused).Class != dbclass.ClassBackPressure {
			t.Errorf("a full server: %v (%T), want its error, back-pressure", refused, refused)
		}
		if containsPassword(refused) {
			t.Errorf("%q shows the password", refused)
		}
	})
}

func containsPassword(err error) bool {
	return err != nil && strings.Contains(err.Error(), servers.DefaultPassword)
}

// TestFrozenStatementReleasedByClose: a statement frozen with a context
// that cannot end returns when its Connector is closed.
func TestFrozenStatementReleasedByClose(t *testing.T) {
	eachServer(t, func(t *testing.T, s *servers.Server) {
		frozen := make(chan struct{}, 1)
		db, c := chaosDBConfig(t, chaos.Config{DriverName: s.DriverName(), DSN: s.DSN(),
			Faults:  []chaos.Fault{{Kind: chaos.KindFreeze}},
			OnFault: func(chaos.Event) { frozen <- struct{}{} }})
		conn := servers.Pinned(t, ctxT(t), db)
		done := make(chan error, 1)
		go func() {
			_, err := conn.ExecContext(context.Background(), "SELECT 1")
			done <- err
		}()
		<-frozen
		c.Close()
		err := <-done
		if err == nil {
			t.Fatal("a frozen statement succeeded")
		}
		t.Logf("%q: %v", err, dbclass.Classify(err))
	})
}
