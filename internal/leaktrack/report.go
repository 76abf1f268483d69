package leaktrack

import (
	"context"
	"log/slog"
	"time"

	"github.com/respool/respool/leak"
)

// LogLost logs that an object of the named pool was lost without being given
// back and has been reclaimed.
func LogLost(logger *slog.Logger, pool string, site *Site) {
	logger.LogAttrs(context.Background(), slog.LevelError, leak.MsgLeak,
		slog.String("pool", pool),
		slog.String("taken_at", site.String()),
		slog.String("action", "object destroyed and its slot freed"))
}

// LogHeld logs that an object of the named pool has been held longer than
// threshold.
func LogHeld(logger *slog.Logger, pool string, held, threshold time.Duration, site *Site) {
	logger.LogAttrs(context.Background(), slog.LevelWarn, leak.MsgHeld,
		slog.String("pool", pool),
		slog.Duration("held", held),
		slog.Duration("threshold", threshold),
		slog.String("taken_at", site.String()))
}
