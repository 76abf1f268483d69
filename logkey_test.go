package respool

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// respool_log sets the level of respool's lines without code: debug shows
// the first failure that its caller got (logged at Debug) on a handler at
// Info; off and error show nothing of it.
func TestLogKeySetsTheLevelOfRespoolsLines(t *testing.T) {
	for _, c := range []struct {
		value string
		want  slog.Level
		shown bool
	}{
		{"debug", slog.LevelDebug, true},
		{"info", slog.LevelInfo, false},
		{"WARN", slog.LevelWarn, false},
		{"error", slog.LevelError, false},
		{"off", logOff, false},
	} {
		t.Run(c.value, func(t *testing.T) {
			cfg, err := ParseDSN("postgres://app@db/app?respool_log=" + c.value)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.LogLevel == nil || cfg.LogLevel.Level() != c.want {
				t.Fatalf("LogLevel = %v, want %v", cfg.LogLevel, c.want)
			}
			if got, want := cfg.FormatDSN(), "postgres://app@db/app?respool_log="+strings.ToLower(c.value); got != want {
				t.Errorf("FormatDSN = %q, want %q", got, want)
			}
			logs := &syncWriter{w: new(bytes.Buffer)}
			handler := slog.NewTextHandler(logs, nil) // at Info, as slog.Default's
			pingClosedPort(t, "&respool_log="+c.value, slog.New(handler))
			if shown := strings.Contains(logs.String(), `msg="create failed"`); shown != c.shown {
				t.Errorf("respool_log=%s: the failure shown %v, want %v; log:\n%s", c.value, shown, c.shown, logs)
			}
		})
	}
	_, err := ParseDSN("postgres://app@db/app?respool_log=loud")
	var de *DSNError
	if !errors.As(err, &de) || de.Key != "respool_log" || !strings.Contains(err.Error(), "off, error, warn, info or debug") {
		t.Errorf("respool_log=loud: %v; want a *DSNError saying what is accepted", err)
	}
	if cfg, err := ParseDSN("postgres://app@db/app"); err != nil || cfg.LogLevel != nil {
		t.Errorf("no respool_log: LogLevel %v, %v; want nil (the handler's level)", cfg.LogLevel, err)
	}
}

// The level of Config.LogLevel is respool's own: lines at or above it reach
// the handler whatever the handler's level, the others do not; off drops
// even errors.
func TestLeveledLoggerIsRespoolsLevel(t *testing.T) {
	for _, c := range []struct {
		level slog.Leveler
		shown []slog.Level
	}{
		{slog.LevelDebug, []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}},
		{slog.LevelWarn, []slog.Level{slog.LevelWarn, slog.LevelError}},
		{logOff, nil},
	} {
		var buf bytes.Buffer
		l := leveled(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})), c.level).With("pool", "p")
		for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			l.Log(t.Context(), level, "line")
		}
		var shown []slog.Level
		for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			if strings.Contains(buf.String(), "level="+level.String()+" msg=line pool=p") {
				shown = append(shown, level)
			}
		}
		if !slices.Equal(shown, c.shown) {
			t.Errorf("LogLevel %v: lines at %v reached the handler, want %v", c.level, shown, c.shown)
		}
	}
}
