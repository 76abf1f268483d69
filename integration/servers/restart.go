package servers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// errNotLocal is returned by the methods that act on a server's processes
// when the harness does not run them itself.
var errNotLocal = errors.New("servers: Restart, Kill, Start, Freeze and Thaw are supported on the local backend only")

// localServer is a local server process that can be stopped and started
// again on the same port and data directory.
type localServer struct {
	mu      sync.Mutex                                  // serialises every method; guards p
	p       *process                                    // nil while the server is stopped or killed
	logPath string                                      // the server's own log
	launch  func() (*process, error)                    // starts the server process
	ready   func(ctx context.Context, p *process) error // waits until the test user can log in
}

// run starts the process and waits until it is ready; on error the process
// is stopped.
func (l *localServer) run(ctx context.Context) error {
	p, err := l.launch()
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

// stopWith stops the running process with sig (see process.stopWith).
func (l *localServer) stopWith(ctx context.Context, sig syscall.Signal) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return errors.New("servers: stop of a server that is not running")
	}
	err := l.p.stopWith(ctx, sig)
	l.p = nil
	return err
}

func (l *localServer) kill(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return errors.New("servers: kill of a server that is not running")
	}
	err := l.p.kill(ctx)
	l.p = nil
	return err
}

func (l *localServer) start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p != nil {
		return errors.New("servers: start of a server that is running")
	}
	if err := l.run(ctx); err != nil {
		return fmt.Errorf("servers: start: %w", err)
	}
	return nil
}

// signal runs freeze or thaw on the running process.
func (l *localServer) signal(what string, f func(*process) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return fmt.Errorf("servers: %s of a server that is not running", what)
	}
	return f(l.p)
}

// Restart stops the server the way its own shutdown does (PostgreSQL: a
// fast shutdown, as pg_ctl restart does; MariaDB: SIGTERM), which ends every
// client's session, and starts it again on the same address with the same
// data. It returns once the test user can log in again. Only local servers
// can be restarted.
func (s *Server) Restart(ctx context.Context) error {
	if s.local == nil {
		return errNotLocal
	}
	return s.local.restart(ctx)
}

// Kill ends every process of the server with SIGKILL, as a crash would: clients' sessions end without a word from the server and new
// connections are refused. It returns once the processes have exited. Start
// starts the server again. Local servers only.
func (s *Server) Kill(ctx context.Context) error {
	if s.local == nil {
		return errNotLocal
	}
	return s.local.kill(ctx)
}

// Start starts a killed server again on the same address with the same
// data, after the crash recovery the server runs itself, and returns once
// the test user can log in. Local servers only.
func (s *Server) Start(ctx context.Context) error {
	if s.local == nil {
		return errNotLocal
	}
	return s.local.start(ctx)
}

// Freeze stops every process of the server with SIGSTOP, as a server that
// hangs (a stalled disk, a stop-the-world pause): its sessions stay open and
// new connections complete their TCP handshake, but nothing answers until
// Thaw. Stop and Kill work on a frozen server. Local servers only.
//
// A frozen server whose test process dies stays frozen, with its
// termination signal pending, until it is sent SIGCONT.
func (s *Server) Freeze() error {
	if s.local == nil {
		return errNotLocal
	}
	return s.local.signal("freeze", (*process).freeze)
}

// Thaw lets a server stopped by Freeze run again (SIGCONT). Local servers
// only.
func (s *Server) Thaw() error {
	if s.local == nil {
		return errNotLocal
	}
	return s.local.signal("thaw", (*process).thaw)
}

// LogPath returns the path of the server's own log (its stdout and stderr),
// or "" for a server the harness does not run itself. The file is removed
// by Stop.
func (s *Server) LogPath() string {
	if s.local == nil {
		return ""
	}
	return s.local.logPath
}
