package dbbudget

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respool/respool/dbbudget"
	"github.com/respool/respool/integration/servers"
)

// A budget whose DSN reaches PostgreSQL through PgBouncer (transaction
// pooling: its session-level locks would stay on a server session other
// clients get) is refused at New, with an error that says why and what to
// do, and no password; the same budget on the database itself works.
func TestABudgetThroughPgBouncerIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bouncer, err := servers.StartPgBouncer(ctx, pg, servers.PgBouncerConfig{PoolMode: "transaction"})
	if err != nil {
		t.Fatal(err)
	}
	defer bouncer.Stop(context.Background())
	name := budgetName(t)
	b, err := dbbudget.New(ctx, dbbudget.Config{DSN: bouncer.PgxDSN(), Name: name, Max: 2, Logger: quiet})
	if b != nil {
		b.Close()
	}
	if !errors.Is(err, dbbudget.ErrPooler) {
		t.Fatalf("New through PgBouncer = %v; want ErrPooler", err)
	}
	t.Logf("New through PgBouncer: %v", err)
	for _, part := range []string{"PID", "database itself"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("New's error %q does not say %q", err, part)
		}
	}
	if strings.Contains(err.Error(), bouncer.Password) {
		t.Errorf("New's error shows the password: %v", err)
	}
	newBudget(t, pg, "budget_a", name, 2, time.Second) // the database itself: accepted
}
