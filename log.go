package respool

import (
	"context"
	"log/slog"
	"strings"
)

// logOff is the level of respool_log=off: above every line respool logs.
const logOff = slog.LevelError + 64

// leveled returns l with its lines below level dropped and the others
// handed to l's handler whatever its own level (Config.LogLevel).
func leveled(l *slog.Logger, level slog.Leveler) *slog.Logger {
	return slog.New(levelHandler{h: l.Handler(), level: level})
}

// levelHandler is a handler whose level is its own, not h's.
type levelHandler struct {
	h     slog.Handler
	level slog.Leveler
}

func (l levelHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= l.level.Level()
}

func (l levelHandler) Handle(ctx context.Context, r slog.Record) error { return l.h.Handle(ctx, r) }

func (l levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{h: l.h.WithAttrs(attrs), level: l.level}
}

func (l levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{h: l.h.WithGroup(name), level: l.level}
}

// levelName is the respool_log value of level: off, error, warn, info or
// debug, or slog's spelling of a level between them (info+2).
func levelName(level slog.Level) string {
	if level > slog.LevelError {
		return "off"
	}
	return strings.ToLower(level.String())
}

// parseLevel reads a respool_log value: off, or a level as slog spells it,
// in any case.
func parseLevel(v string) (slog.Level, bool) {
	if strings.EqualFold(v, "off") {
		return logOff, true
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(v)); err != nil {
		return 0, false
	}
	return level, true
}
