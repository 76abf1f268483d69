package servers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Redis is a redis-server the harness runs on a loopback port, keeping
// nothing on disk (no RDB, no AOF): a Kill loses its data, as a crash of
// an unpersisted Redis does. Install it with scripts/ensure-redis.sh.
type Redis struct {
	Addr string // host:port

	dir  string
	port int
	mu   sync.Mutex
	proc *process // nil while stopped
}

// StartRedis starts a redis-server on a free loopback port and waits until
// it answers PING, within ctx.
func StartRedis(ctx context.Context) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("servers: redis-server not found (run scripts/ensure-redis.sh): %w", err)
	}
	dir, err := os.MkdirTemp("", "respool-redis-")
	if err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	for attempt := 1; ; attempt++ { // another process may take the port first: the server exits
		port, err := takePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, port: port}
		err = r.run(ctx, bin)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, errExited) || attempt == 3 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

// run starts redis-server on r's port and waits until it answers.
func (r *Redis) run(ctx context.Context, bin string) error {
	p, err := startProcess(filepath.Join(r.dir, "redis.log"), nil, syscall.SIGTERM, bin,
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--daemonize", "no", "--protected-mode", "no")
	if err != nil {
		return err
	}
	if err := p.waitReady(ctx, r.ping); err != nil {
		_ = p.kill(context.Background())
		return err
	}
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	return nil
}

// ping sends PING and reads +PONG.
func (r *Redis) ping(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", r.Addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("servers: redis answered %q to PING", line)
	}
	return nil
}

// Kill ends redis-server with SIGKILL (its data is lost) and waits until it
// has exited.
func (r *Redis) Kill(ctx context.Context) error {
	r.mu.Lock()
	p := r.proc
	r.proc = nil
	r.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.kill(ctx)
}

// Start starts a killed or stopped redis-server again, on the same port,
// empty. It refuses to start a second one.
func (r *Redis) Start(ctx context.Context) error {
	r.mu.Lock()
	running := r.proc != nil
	r.mu.Unlock()
	if running {
		return errors.New("servers: redis-server is running already")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	return r.run(ctx, bin)
}

// Stop stops redis-server and removes its directory.
func (r *Redis) Stop(ctx context.Context) error {
	r.mu.Lock()
	p := r.proc
	r.proc = nil
	r.mu.Unlock()
	var err error
	if p != nil {
		err = p.stop(ctx)
	}
	return errors.Join(err, os.RemoveAll(r.dir))
}

// Freeze stops redis-server with SIGSTOP: it keeps its connections and
// answers nothing, as a Redis late under load or cut off does, until Thaw.
func (r *Redis) Freeze() error { return r.signal((*process).freeze) }

// Thaw lets a redis-server stopped by Freeze run again (SIGCONT).
func (r *Redis) Thaw() error { return r.signal((*process).thaw) }

// signal applies f to the running redis-server.
func (r *Redis) signal(f func(*process) error) error {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p == nil {
		return errors.New("servers: redis-server is not running")
	}
	return f(p)
}
