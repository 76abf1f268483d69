package dbbudget

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/respool/respool/integration/servers"
)

// pg and maria are the suite's servers; each has the users of budgetUsers,
// whose sessions are the coordinating ones (the pools log in as the test
// user), so that a test counts and kills them apart.
var pg, maria *servers.Server

var budgetUsers = []string{"budget_a", "budget_b", "budget_c"}

const budgetPassword = "budget-secret"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" { // a holder process that a test kills (see holdInChild)
		os.Exit(holdAsChild())
	}
	goleak.VerifyTestMain(servers.Suite(m, func(ctx context.Context) (started []servers.Stopper, err error) {
		if pg, maria, err = servers.StartBoth(ctx); err != nil {
			return nil, err
		}
		started = append(started, pg, maria)
		for _, s := range []*servers.Server{pg, maria} {
			for _, u := range budgetUsers {
				if err := s.CreateUser(ctx, u, budgetPassword); err != nil {
					return started, err
				}
			}
		}
		// fullUser's logins beyond one are refused with 53300 (signal_test.go).
		if err := pg.CreateUser(ctx, fullUser, budgetPassword); err != nil {
			return started, err
		}
		return started, nil
	}))
}
