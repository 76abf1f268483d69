package servers

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// errNoRestart is returned by Restart on a server the harness cannot restart.
var errNoRestart = errors.New("servers: Restart is supported on the local backend only")

// localServer is a local server process that can be stopped and started
// again on the same port and data directory.
type localServer struct {
	mu    sync.Mutex // serialises restart and stop; guards p
	p     *process
	start func() (*process, error)                    // starts the server process
	ready func(ctx context.Context, p *process) error // waits until the test user can log in
}

// run starts the process and waits until it is ready; on error the process
// is stopped.
func (l *localServer) run(ctx context.Context) error {
	p, err := l.start()
	if err != nil {
		return err
	}
	if err := l.ready(ctx, p); err != nil {
		_ = p.stop(ctx)
		return err
	}
	l.p = p
	return nil
}

func (l *localServer) restart(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return errors.New("servers: restart of a stopped server")
	}
	err := l.p.stop(ctx)
	l.p = nil
	if err != nil {
		return fmt.Errorf("servers: restart: %w", err)
	}
	if err := l.run(ctx); err != nil {
		return fmt.Errorf("servers: restart: %w", err)
	}
	return nil
}

func (l *localServer) stop(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return nil
	}
	err := l.p.stop(ctx)
	l.p = nil
	return err
}

// Restart stops the server the way its own shutdown does (PostgreSQL: a
// fast shutdown, as pg_ctl restart does; MariaDB: SIGTERM), which ends every
// client's session, and starts it again on the same address with the same
// data. It returns once the test user can log in again. Only local servers
// can be restarted.
func (s *Server) Restart(ctx context.Context) error {
	if s.restart == nil {
		return errNoRestart
	}
	return s.restart(ctx)
}
