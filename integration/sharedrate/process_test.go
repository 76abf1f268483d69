package sharedrate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/redisbudget"
)

// The environment of a child process (see startProcesses): the Name
// shared, the Redis address, the connect rate.
const (
	envName  = "RESPOOL_SHAREDRATE_NAME"
	envRedis = "RESPOOL_SHAREDRATE_REDIS"
	envRate  = "RESPOOL_SHAREDRATE_RATE"
)

// childCallers is how many callers of a child process dial without pause.
const childCallers = 4

// dialsKey is the key where the child processes sharing name count their
// dials.
func dialsKey(name string) string { return "respool:test:dials:" + name }

// isChild reports whether this test binary runs as a child process.
func isChild() bool { return os.Getenv(envName) != "" }

// TestChildProcess is the body of a child process: a Guard sharing the
// Name of its environment, whose callers dial until the process is
// killed, each dial counted in Redis. Outside a child it does nothing.
func TestChildProcess(t *testing.T) {
	if !isChild() {
		t.Skip("the body of a child process of TestEightProcessesShareAConnectRate")
	}
	name := os.Getenv(envName)
	rate, err := strconv.Atoi(os.Getenv(envRate))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envRedis), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	c := dbguard.Config{ConnectRate: rate}
	// A Timeout of 1s: a busy machine running -race makes Redis late now
	// and then, and each Take it does not answer within Timeout is
	// counted alone (a permit beyond the shared rate at most).
	if err := redisbudget.Share(&c, redisbudget.ShareConfig{Client: rdb, Name: name, Timeout: time.Second, Logger: quiet}); err != nil {
		t.Fatal(err)
	}
	g, err := dbguard.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	create := through(g, func(ctx context.Context) (int, error) {
		return 0, rdb.Incr(ctx, dialsKey(name)).Err()
	})
	var wg sync.WaitGroup
	for range childCallers {
		wg.Go(func() {
			for {
				_, _ = create(context.Background())
			}
		})
	}
	wg.Wait() // never: the parent kills the process
}

// startProcesses starts n child processes sharing name at rate, killed
// when the test ends.
func startProcesses(t *testing.T, n int, name string, rate int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		cancel()
		for _, cmd := range cmds {
			_ = cmd.Wait()
		}
	})
	for range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1", "-test.timeout=0")
		cmd.Env = append(os.Environ(), envName+"="+name, envRedis+"="+rds.Addr, envRate+"="+strconv.Itoa(rate))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
}

// snapshotScript returns Redis's TIME and the count at KEYS[1], in one step.
var snapshotScript = redis.NewScript(`
local t = redis.call('TIME')
return {t[1], t[2], tonumber(redis.call('GET', KEYS[1]) or '0')}
`)

// snapshot returns the time at Redis and the dials counted at name, read
// together.
func snapshot(t *testing.T, rdb *redis.Client, name string) (time.Time, int64) {
	t.Helper()
	v, err := snapshotScript.Run(context.Background(), rdb, []string{dialsKey(name)}).Slice()
	if err != nil || len(v) != 3 {
		t.Fatalf("snapshot: %v, %v", v, err)
	}
	sec, _ := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
	usec, _ := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
	return time.Unix(sec, usec*1000), v[2].(int64)
}
