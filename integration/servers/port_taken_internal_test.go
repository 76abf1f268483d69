package servers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A server started on a port another throwaway server already holds must
// not take that server for its own (same user and password): its readiness
// check asks the data directory, its process exits on the bind failure, and
// it starts again on another port. Before, PostgreSQL's failed with "create
// database: database "respool" already exists" and MariaDB's came up on the
// other server.
func TestStartOnATakenPortUsesItsOwnServer(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		start func(context.Context, ...Option) (*Server, error)
	}{
		{KindPostgres, StartPostgres},
		{KindMariaDB, StartMariaDB},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			first, err := tc.start(ctx, Local())
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = first.Stop(context.Background()) }()

			var handedOut atomic.Bool
			takePort = func() (int, error) {
				if handedOut.CompareAndSwap(false, true) {
					return first.Port, nil // taken: first listens there
				}
				return freePort()
			}
			defer func() { takePort = freePort }()
			second, err := tc.start(ctx, Local())
			if err != nil {
				t.Fatalf("second server on a taken port: %v", err)
			}
			defer func() { _ = second.Stop(context.Background()) }()
			if !handedOut.Load() || second.Port == first.Port {
				t.Fatalf("second server on port %d (first's %d, handed out %v); want another port",
					second.Port, first.Port, handedOut.Load())
			}
		})
	}
}
