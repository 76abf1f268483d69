package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	pollInterval = 20 * time.Millisecond // between readiness attempts
	stopGrace    = 15 * time.Second      // before a stopping server is killed
	logTailLines = 20
)

// errExited reports that a server process exited before it became ready.
var errExited = errors.New("server process exited")

// process is a running server process whose stdout and stderr go to logPath.
type process struct {
	cmd     *exec.Cmd
	logPath string
	stopSig syscall.Signal
	done    chan struct{} // closed once the process has exited and waitErr is set
	waitErr error
}

// startProcess starts path with args as the user in cred (nil: ourselves).
// stopSig is sent by stop and, on Linux, when the test process dies.
func startProcess(logPath string, cred *syscall.Credential, stopSig syscall.Signal, path string, args ...string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	defer f.Close() // the child keeps its own descriptor
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr(cred, stopSig)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("servers: start %s: %w", filepath.Base(path), err)
	}
	p := &process{cmd: cmd, logPath: logPath, stopSig: stopSig, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop signals the process with its stop signal and waits for it to exit,
// killing it after stopGrace or when ctx ends. On return the process has
// exited.
func (p *process) stop(ctx context.Context) error { return p.stopWith(ctx, p.stopSig) }

// stopWith is stop with the signal sig.
func (p *process) stopWith(ctx context.Context, sig syscall.Signal) error {
	select {
	case <-p.done:
		if p.waitErr != nil {
			return fmt.Errorf("servers: %s had exited: %v", p.name(), p.waitErr)
		}
		return nil
	default:
	}
	_ = p.thaw() // a frozen server must run to stop
	_ = p.cmd.Process.Signal(sig)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("servers: %s did not stop on %v; killed", p.name(), sig)
}

// freeze stops the server's first process with SIGSTOP, so that it forks
// no more, and then the processes it forked (PostgreSQL's backends, each in
// a session of its own, so that the first process's group is not theirs).
func (p *process) freeze() error {
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("servers: freeze %s: %w", p.name(), err)
	}
	for _, kid := range children(pid) {
		_ = syscall.Kill(kid, syscall.SIGSTOP) // one may have exited meanwhile
	}
	return nil
}

// thaw lets every process of the server run again (SIGCONT).
func (p *process) thaw() error {
	pid := p.cmd.Process.Pid
	for _, kid := range children(pid) {
		_ = syscall.Kill(kid, syscall.SIGCONT)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("servers: thaw %s: %w", p.name(), err)
	}
	return nil
}

// kill ends every process of the server with SIGKILL, as a crash of its
// host would, and waits until they have all exited, or until ctx ends.
func (p *process) kill(ctx context.Context) error {
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP) // forks no more
	kids := children(pid)
	for _, kid := range kids {
		_ = syscall.Kill(kid, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("servers: %s did not exit on SIGKILL: %w", p.name(), ctx.Err())
	}
	// Until its processes are gone, PostgreSQL refuses to start in the
	// same directory.
	for _, kid := range kids {
		for alive(kid) {
			t := time.NewTimer(pollInterval / 4)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("servers: process %d of %s did not exit on SIGKILL: %w", kid, p.name(), ctx.Err())
			}
		}
	}
	return nil
}

func (p *process) name() string { return filepath.Base(p.cmd.Path) }

// waitReady calls try every pollInterval until it succeeds, the process
// exits (the error wraps errExited) or ctx ends. Errors include the log tail.
func (p *process) waitReady(ctx context.Context, try func(context.Context) error) error {
	var last error
	for {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		last = try(attempt)
		cancel()
		if last == nil {
			return nil
		}
		t := time.NewTimer(pollInterval)
		select {
		case <-t.C:
		case <-p.done:
			t.Stop()
			return fmt.Errorf("servers: %s: %w (%v)%s", p.name(), errExited, p.waitErr, logTail(p.logPath))
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("servers: %s not ready: %w; last attempt: %v%s", p.name(), ctx.Err(), last, logTail(p.logPath))
		}
	}
}

// runTool runs a setup program to completion, appending its output to
// logPath. Its error includes the log tail.
func runTool(ctx context.Context, logPath string, cred *syscall.Credential, path string, args ...string) error {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("servers: %w", err)
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr(cred, syscall.SIGKILL)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("servers: %s: %w%s", filepath.Base(path), err, logTail(logPath))
	}
	return nil
}

// logTail returns the last lines of the log at path, formatted to follow an
// error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var errs []string // the lines that say what went wrong, wherever they are
	for _, l := range lines {
		if strings.Contains(l, "ERROR") || strings.Contains(l, "[ERROR]") || strings.Contains(l, "FATAL") {
			errs = append(errs, l)
		}
	}
	if len(errs) > logTailLines {
		errs = errs[:logTailLines]
	}
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	out := "\n--- tail of " + path + " ---\n" + strings.Join(lines, "\n")
	if len(errs) > 0 {
		out = "\n--- errors in " + path + " ---\n" + strings.Join(errs, "\n") + out
	}
	return out
}
