package respool

import (
	"log/slog"
	"sync/atomic"

	"github.com/respool/respool/resilience"
)

// logEvents logs the circuit opening (Warn; Error with the refusal when
// the server refused the credentials) and closing again (Info), and
// a pause beginning (Warn) and ending (Info): a few lines per outage, not
// one per rejection, failed probe or extension.
func logEvents(l *slog.Logger, poolName string) resilience.Listener {
	var paused atomic.Bool
	return func(e resilience.Event) {
		switch {
		case e.Mechanism == "breaker" && e.Kind == resilience.EventStateChange && e.From == "closed" && e.To == "open" && e.Err != nil:
			// dbguard opened it for a connection attempt refused for its
			// credentials: e.Err names the user and the server, redacted.
			l.Error("circuit opened: the server refused the credentials", "pool", poolName, "probe_in", e.Delay, "error", e.Err)
		case e.Mechanism == "breaker" && e.Kind == resilience.EventStateChange && e.From == "closed" && e.To == "open":
			l.Warn("circuit opened", "pool", poolName, "probe_in", e.Delay)
		case e.Mechanism == "breaker" && e.Kind == resilience.EventStateChange && e.To == "closed":
			l.Info("circuit closed", "pool", poolName)
		case e.Mechanism == "pause" && e.Kind == resilience.EventPaused && paused.CompareAndSwap(false, true):
			l.Warn("creations paused", "pool", poolName, "for", e.Delay, "error", e.Err)
		case e.Mechanism == "pause" && e.Kind == resilience.EventResumed && paused.CompareAndSwap(true, false):
			l.Info("creations resumed", "pool", poolName)
		}
	}
}
