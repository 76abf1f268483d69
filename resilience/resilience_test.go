package resilience_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/resilience"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errReason = errors.New("full")

func TestRejectedErrorCarriesItsRetryAfter(t *testing.T) {
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	err := fmt.Errorf("query: %w", &resilience.RejectedError{Mechanism: "ratelimit", Name: "api", Reason: errReason, At: at, RetryAt: at.Add(2 * time.Second)})
	if !errors.Is(err, resilience.ErrRejected) || !errors.Is(err, errReason) {
		t.Fatalf("%v should match ErrRejected and its reason", err)
	}
	got, ok := resilience.RetryAfter(err)
	if !ok || !got.Equal(at.Add(2*time.Second)) {
		t.Fatalf("RetryAfter = %v, %v", got, ok)
	}
	if want := "ratelimit api: full (retry after 2s)"; !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q lacks %q", err.Error(), want)
	}
	if _, ok := resilience.RetryAfter(&resilience.RejectedError{Mechanism: "breaker", Reason: errReason, At: at}); ok {
		t.Fatal("a zero RetryAt is no retry-after")
	}
	if _, ok := resilience.RetryAfter(errReason); ok {
		t.Fatal("a plain error has no retry-after")
	}
}

func TestConfigErrorNamesTheField(t *testing.T) {
	err := &resilience.ConfigError{Mechanism: "bulkhead", Field: "MaxConcurrent", Value: -1, Accepted: "a count >= 0"}
	if want := "bulkhead: Config.MaxConcurrent = -1: want a count >= 0"; err.Error() != want {
		t.Fatalf("%v; want %q", err, want)
	}
}

type countingGuard struct{ enters, exits int }

func (g *countingGuard) Enter(context.Context) (resilience.Permit, error) {
	g.enters++
	return resilience.Permit{Token: 7}, nil
}

func (g *countingGuard) Exit(p resilience.Permit, _ error) {
	if p.Token == 7 {
		g.exits++
	}
}

func TestDoEntersAndExits(t *testing.T) {
	g := &countingGuard{}
	v, err := resilience.Do(context.Background(), g, func(context.Context) (string, error) { return "x", nil })
	if v != "x" || err != nil || g.enters != 1 || g.exits != 1 {
		t.Fatalf("got %q, %v; guard %+v", v, err, g)
	}
}

// TestLogListenerAttributes checks the stable attribute names.
func TestLogListenerAttributes(t *testing.T) {
	var buf bytes.Buffer
	l := resilience.LogListener(slog.New(slog.NewTextHandler(&buf, nil)))
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	l(resilience.Event{Time: at, Mechanism: "breaker", Name: "db", Kind: resilience.EventStateChange, From: "closed", To: "open",
		Delay: 5 * time.Second, RetryAt: at.Add(5 * time.Second)})
	l(resilience.Event{Time: at, Mechanism: "retry", Kind: resilience.EventRetry, Attempt: 2, Err: errReason})
	out := buf.String()
	for _, want := range []string{
		"level=INFO msg=resilience mechanism=breaker name=db event=state_change from=closed to=open delay=5s retry_at=2024-01-01T00:00:05.000Z",
		"level=INFO msg=resilience mechanism=retry event=retry attempt=2 error=full",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestListenersFanOut(t *testing.T) {
	n := 0
	count := func(resilience.Event) { n++ }
	resilience.Listeners(count, nil, count)(resilience.Event{Kind: resilience.EventReset})
	if n != 2 {
		t.Fatalf("%d calls; want 2", n)
	}
	if resilience.EventKind(0).String() != "unknown" || resilience.EventPaused.String() != "paused" {
		t.Fatal("EventKind names")
	}
}
