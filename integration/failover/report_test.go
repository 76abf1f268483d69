package failover

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respool/respool/integration/servers"
)

// reportEnv names the file the report is written to, when set.
const reportEnv = "RESPOOL_FAILOVER_REPORT"

// scenarios run in this order; each runs every client of its server kinds
// at once, on the same fault.
var scenarios = []scenario{
	{name: "demote", event: "the demotion", dialWindow: "after the demotion", run: runDemote, recovery: true,
		kinds: []string{servers.KindPostgres}},
	{name: "promote", event: "the promotion", dialWindow: "from the stop until the standby took writes", run: runPromote,
		recovery: true, kinds: []string{servers.KindPostgres}},
	{name: "read_only", event: "read_only off", dialWindow: "while read_only was on", run: runReadOnly, recovery: true,
		kinds: []string{servers.KindMariaDB}},
	{name: "rotation", dialWindow: "after the rotation", run: runRotation,
		kinds: []string{servers.KindPostgres, servers.KindMariaDB}, skip: rejectReadOnly},
}

// rejectReadOnly says c is one of the MariaDB clients with rejectReadOnly,
// which change nothing in a rotation.
func rejectReadOnly(c client) bool { return strings.HasSuffix(c.name, "rejectReadOnly") }

type scenario struct {
	name       string
	event      string // what the recovery times are measured from
	dialWindow string // when the dials were counted
	run        func(t *testing.T) map[string]*outcome
	recovery   bool // the report has rows for the recovery times
	kinds      []string
	skip       func(client) bool // clients of kinds the scenario does not run; nil: none
}

// runs says whether the scenario measures c.
func (sc scenario) runs(c client) bool {
	return slices.Contains(sc.kinds, c.kind) && (sc.skip == nil || !sc.skip(c))
}

// report collects every outcome of TestFailover.
type report struct {
	mu       sync.Mutex
	outcomes map[string]map[string]*outcome // scenario → client key → outcome
}

func newReport() *report { return &report{outcomes: map[string]map[string]*outcome{}} }

func (r *report) add(sc scenario, key string, o *outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outcomes[sc.name] == nil {
		r.outcomes[sc.name] = map[string]*outcome{}
	}
	r.outcomes[sc.name][key] = o
}

func (r *report) outcome(scenario string, c client) *outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[scenario][c.key()]
}

// table formats the report as a Markdown table per server kind, with a
// line saying how it was measured.
func (r *report) table(took time.Duration) string {
	var b strings.Builder
	for _, kind := range []string{servers.KindPostgres, servers.KindMariaDB} {
		var cols []client
		for _, c := range clients {
			if c.kind == kind {
				cols = append(cols, c)
			}
		}
		fmt.Fprintf(&b, "\n%s\n\n| scenario |", map[string]string{servers.KindPostgres: "PostgreSQL", servers.KindMariaDB: "MariaDB"}[kind])
		for _, c := range cols {
			b.WriteString(" " + c.name + " |")
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
		for _, sc := range scenarios {
			if !slices.Contains(sc.kinds, kind) {
				continue
			}
			row := func(label string, cell func(c client, o *outcome) string) {
				b.WriteString("| " + sc.name + ": " + label + " |")
				for _, c := range cols {
					text := "—"
					if o := r.outcome(sc.name, c); o != nil {
						text = cell(c, o)
					}
					b.WriteString(" " + text + " |")
				}
				b.WriteString("\n")
			}
			row("writes/s before the fault", func(_ client, o *outcome) string { return fmt.Sprintf("%.0f", o.before) })
			row("failed writes", func(c client, o *outcome) string { return failures(o) })
			if sc.recovery {
				row("first write after "+sc.event, func(_ client, o *outcome) string { return since(o.first) })
				if sc.name == "promote" {
					row("first write after the standby took writes", func(_ client, o *outcome) string { return since(o.firstTakes) })
				}
				row("every writer after "+sc.event, func(_ client, o *outcome) string { return since(o.all) })
				row("read-only failures after the first write", func(_ client, o *outcome) string { return fmt.Sprint(o.roAfterFirst) })
			}
			row("dials "+sc.dialWindow, func(_ client, o *outcome) string { return fmt.Sprint(o.dials) })
		}
	}
	fmt.Fprintf(&b, "\n%d writers per client, pools of %d (database/sql: SetMaxOpenConns and SetMaxIdleConns %d), every write "+
		"with a %v deadline and a writer's pause of %v after a failure, every client of a server kind at once on the same fault "+
		"(promote: one client after the other, each on its own pair of servers), each through its own counting proxy per "+
		"server on loopback; PostgreSQL clients on postgres://…@A,B/…?target_session_attrs=read-write. "+
		"demote: A made read-only in place, B a second writable primary, a recovery is a write on B (%v measured). "+
		"promote: A stopped with -m immediate, its streaming standby B promoted %v later. read_only: MariaDB read_only=1 for %v. "+
		"rotation: ALTER USER of the clients' user, connections living %v, each client's per-dial password hook given the new "+
		"password over %v. Failed writes are counted from the fault: read-only (25006, 1290, 1792), "+
		"connection (refused, broken, no read-write server, the pool's fail-fast), deadline, auth (28P01, 1045), other. "+
		"%s, %d CPUs, race detector %s; the suite took %v, servers' start included.\n",
		writers, poolSize, poolSize, writeDeadline, retryPause, demoteWindow, outage, readOnlyWindow, lifetime, rotationWindow,
		runtime.Version(), runtime.NumCPU(), onOff(raceEnabled), took.Round(time.Second))
	return b.String()
}

// failures formats a count of failed writes by class.
func failures(o *outcome) string {
	var parts []string
	for c, n := range o.fails {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", class(c), n))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", o.failed(), strings.Join(parts, ", "))
}

// since formats a recovery time, or says there was none.
func since(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
