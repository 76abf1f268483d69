package resilience_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/respool/respool/resilience"
)

// Every rejection carries when a retry can succeed.
func ExampleRetryAfter() {
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	err := &resilience.RejectedError{Mechanism: "breaker", Name: "orders", Reason: errors.New("circuit open"),
		At: now, RetryAt: now.Add(30 * time.Second)}
	at, ok := resilience.RetryAfter(fmt.Errorf("load orders: %w", err))
	fmt.Println(at.Sub(now), ok, errors.Is(err, resilience.ErrRejected))
	// Output: 30s true true
}

// Events log through log/slog with stable attribute names.
func ExampleLogListener() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	listen := resilience.LogListener(slog.New(h))
	listen(resilience.Event{Mechanism: "pause", Name: "pg", Kind: resilience.EventPaused, Delay: 15 * time.Second,
		Err: errors.New("too many connections")})
	// Output: level=WARN msg=resilience mechanism=pause name=pg event=paused delay=15s error="too many connections"
}
