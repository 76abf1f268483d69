package dbbudget

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/respool/respool/dbbudget"
	"github.com/respool/respool/integration/servers"
	"github.com/respool/respool/pool"
)

// The environment of a holder process (holdInChild): the DSN of its
// coordinating session, the budget's name and size.
const (
	childEnv     = "DBBUDGET_CHILD_DSN"
	childNameEnv = "DBBUDGET_CHILD_NAME"
	childMaxEnv  = "DBBUDGET_CHILD_MAX"
	childHeld    = "held"
)

// holdAsChild is the test binary run as a holder process: it takes every
// slot of the budget, says so on stdout, and waits to be killed (at most a
// minute; stdin closed ends it too).
func holdAsChild() int {
	max, err := strconv.Atoi(os.Getenv(childMaxEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := dbbudget.New(ctx, dbbudget.Config{DSN: os.Getenv(childEnv), Name: os.Getenv(childNameEnv), Max: max, Timeout: time.Second, Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for range max {
		if _, err := b.Acquire(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	fmt.Println(childHeld)
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(time.Minute):
	}
	return 0
}

// holdInChild starts the test binary as a process holding all max slots of
// the budget name on s, as user, and returns once it holds them; the
// process is killed when the test ends, if it is still alive.
func holdInChild(t *testing.T, s *servers.Server, user, name string, max int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+as(s, user).DSN(), childNameEnv+"="+name, childMaxEnv+"="+strconv.Itoa(max))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		if line != childHeld+"\n" {
			t.Fatalf("the holder process said %q; want %q", line, childHeld)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the holder process did not take its slots within 30s")
	}
	return cmd
}

// A process killed with SIGKILL while it holds every slot frees them at
// once: the kernel closes its session's socket, the server ends the
// session and its locks; another process gets a slot within 1s.
func TestAProcessKilledWithSIGKILLFreesItsSlotsWithinASecond(t *testing.T) {
	engines(t, func(t *testing.T, s *servers.Server) {
		name := budgetName(t)
		child := holdInChild(t, s, "budget_c", name, 3)
		other := newBudget(t, s, "budget_b", name, 3, time.Second)
		mustBeRefused(t, other, "every slot held by the other process")
		killed := time.Now()
		if err := child.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		within, cancel := context.WithDeadline(ctx, killed.Add(time.Second))
		defer cancel()
		servers.WaitFor(t, within, "a slot of the killed process, within 1s", func() (bool, error) {
			_, err := other.Acquire(ctx)
			if errors.Is(err, pool.ErrBudgetExhausted) {
				return false, nil
			}
			return err == nil, err
		})
		t.Logf("a slot came back %v after SIGKILL", time.Since(killed))
		servers.AcquireSlots(t, other, 2) // all three
	})
}
