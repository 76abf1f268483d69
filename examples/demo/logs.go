package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// logSink is the slog.Handler of respool's log lines during the demo (a
// pool opened by sql.Open logs through slog.Default): it prints each line
// through the display, a LEAK-DETECTED report with its stack, and hands
// LEAK-DETECTED reports to whoever waits for one.
type logSink struct {
	*logState
	pre []slog.Attr // from WithAttrs
}

type logState struct {
	d     *display
	leaks chan leakReport // buffered; a report that finds it full is dropped
}

// leakReport is one LEAK-DETECTED line.
type leakReport struct {
	pool, takenAt, action string
}

func newLogSink(d *display) *logSink {
	return &logSink{logState: &logState{d: d, leaks: make(chan leakReport, 8)}}
}

func (s *logSink) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	var attrs []string
	var rep leakReport
	each := func(a slog.Attr) bool {
		switch a.Key {
		case "taken_at":
			rep.takenAt = a.Value.String()
			return true
		case "pool":
			rep.pool = a.Value.String()
		case "action":
			rep.action = a.Value.String()
		}
		attrs = append(attrs, fmt.Sprintf("%s=%q", a.Key, a.Value.String()))
		return true
	}
	for _, a := range s.pre {
		each(a)
	}
	r.Attrs(each)
	s.d.printf("  respool log: %s %s %s", r.Level, r.Message, strings.Join(attrs, " "))
	if r.Message != "LEAK-DETECTED" {
		return nil
	}
	if rep.takenAt != "" {
		s.d.printf("    taken_at:")
		for line := range strings.SplitSeq(strings.TrimSpace(rep.takenAt), "\n") {
			s.d.printf("      %s", line)
		}
	}
	select {
	case s.leaks <- rep:
	default:
	}
	return nil
}

func (s *logSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &logSink{logState: s.logState, pre: append(s.pre[:len(s.pre):len(s.pre)], as...)}
}

// WithGroup is not needed by respool's lines: attributes stay flat.
func (s *logSink) WithGroup(string) slog.Handler { return s }
