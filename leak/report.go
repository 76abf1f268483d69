package leak

import (
	"context"
	"log/slog"
	"time"
)

// Messages logged by the reports; stable, so that logs can be searched.
const (
	MsgLeak = "LEAK-DETECTED"
	MsgHeld = "HELD-TOO-LONG"
)

// LogLost logs that an object was lost without being given back and has been
// reclaimed. what names the object (for example "pool object"); it must not
// contain secrets.
func LogLost(logger *slog.Logger, what string, site *Site) {
	logger.LogAttrs(context.Background(), slog.LevelError, MsgLeak,
		slog.String("object", what),
		slog.String("taken_at", site.String()),
		slog.String("action", "object destroyed and its slot freed"))
}

// LogHeld logs that an object has been held longer than threshold.
func LogHeld(logger *slog.Logger, what string, held, threshold time.Duration, site *Site) {
	logger.LogAttrs(context.Background(), slog.LevelWarn, MsgHeld,
		slog.String("object", what),
		slog.Duration("held", held),
		slog.Duration("threshold", threshold),
		slog.String("taken_at", site.String()))
}
