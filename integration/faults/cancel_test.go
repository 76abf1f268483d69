package faults

import (
	"database/sql"
	"testing"
	"time"

	"github.com/respool/respool"
	"github.com/respool/respool/integration/servers"
	respoolpool "github.com/respool/respool/pool"
)

const cancelWindow = 3 * time.Second

// cancelClients are the pools TestCancelKeepsSessionsWithinTheLimit
// compares: the plain drivers, respool as configured by default, respool
// serving its callers first-in-first-out (most calls then get their
// connection too late and are cancelled mid-statement: the worst case), and
// respool with both waits of issue 9 off (the driver before the fix).
var cancelClients = []client{
	{name: "pgx stdlib", kinds: onPostgres, baseline: true, open: openSQL(poolSize)},
	{name: "mysql", kinds: onMariaDB, baseline: true, open: openSQL(poolSize)},
	respoolClient("respool", poolKeys),
	respoolClient("respool FIFO", poolKeys, func(c *respool.Config) { c.Pool.Overload = respoolpool.OverloadFIFO }),
	respoolClient("respool FIFO, waits off", poolKeys, func(c *respool.Config) {
		c.Pool.Overload = respoolpool.OverloadFIFO
		c.CancelWait, c.SessionEndWait = -1, -1
	}),
}

// TestCancelKeepsSessionsWithinTheLimit is issue 9's "cancellation does not
// multiply sessions": 64 callers with 1 s deadlines run 200 ms queries
// through pools of 10, so that many calls end while their statement runs.
// The sessions of the test user that the server holds open, sampled every
// 10 ms and, on PostgreSQL, as the server logs them, stay within respool's
// pool (the monitor's session is not counted), while the plain drivers open
// new sessions beside those still running cancelled statements. MariaDB's
// own count, Max_used_connections, is logged: it counts a session the
// server has disconnected until it has torn it down, and on a busy machine
// that teardown can outlast the 5 ms respool allows for it (see
// slowOutcome.withinPool).
func TestCancelKeepsSessionsWithinTheLimit(t *testing.T) {
	admin := map[*servers.Server]*sql.DB{}
	for _, set := range sets {
		admin[set.main] = openAdmin(t, set.main, true)
	}
	for _, set := range sets {
		for _, c := range cancelClients {
			if !c.runsOn(set.kind) {
				continue
			}
			t.Run(c.name+" ("+set.kind+")", func(t *testing.T) {
				r := &run{t: t, ctx: suiteCtx, c: c, set: set, admin: admin}
				o := measureSlow(r, cancelWindow)
				t.Logf("%s on %s: %.1f ok/s, errors %s; peak sessions sampled %d (%d samples), %s %d",
					c.name, set.kind, o.okPerSec, o.errors, o.peakSampled, o.samples, o.serverCounter, o.peakServer)
				if c.respool && c.name != "respool FIFO, waits off" && !o.withinPool() {
					t.Errorf("%s: the server held %d sessions open (sampled), counted %d (%s) for a pool of %d",
						c.name, o.peakSampled, o.peakServer, o.serverCounter, poolSize)
				}
			})
		}
	}
}
