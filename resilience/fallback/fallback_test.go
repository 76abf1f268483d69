package fallback_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/fallback"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("down")

func fail(context.Context) (string, error) { return "", errDown }

func TestValueFunctionAndPredicate(t *testing.T) {
	var events int
	f, _ := fallback.New(fallback.Config[string]{Value: "cached", Listener: func(resilience.Event) { events++ }})
	if v, err := f.Do(context.Background(), fail); v != "cached" || err != nil {
		t.Fatalf("value: %q, %v", v, err)
	}
	if v, err := f.Do(context.Background(), func(context.Context) (string, error) { return "fresh", nil }); v != "fresh" || err != nil || events != 1 {
		t.Fatalf("success: %q, %v (%d events)", v, err, events)
	}
	g, _ := fallback.New(fallback.Config[string]{Func: func(_ context.Context, err error) (string, error) {
		return "degraded: " + err.Error(), nil
	}})
	if v, _ := g.Do(context.Background(), fail); v != "degraded: down" {
		t.Fatalf("func: %q", v)
	}
	other := errors.New("other")
	h, _ := fallback.New(fallback.Config[string]{Value: "x", On: func(err error) bool { return errors.Is(err, errDown) }})
	if _, err := h.Do(context.Background(), func(context.Context) (string, error) { return "", other }); err != other {
		t.Fatalf("declined error: %v; want it as it is", err)
	}
}

// TestCallerEndedIsNotReplaced: when the caller's own context has ended
// (cancelled, or its deadline passed), the failure is the caller's: the
// fallback does not turn it into a success, and the error matches the
// context's (as failsafe-go's fallback returns the context's error). The
// operation's own error stays in the chain when it is another.
func TestCallerEndedIsNotReplaced(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPast()
	var events int
	f, _ := fallback.New(fallback.Config[string]{Value: "cached", Listener: func(resilience.Event) { events++ }})
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
		op   func(context.Context) (string, error)
	}{
		{"canceled", canceled, context.Canceled, func(ctx context.Context) (string, error) { return "", ctx.Err() }},
		{"deadline", past, context.DeadlineExceeded, func(ctx context.Context) (string, error) { return "", ctx.Err() }},
		{"canceled, another failure", canceled, context.Canceled, fail},
	} {
		v, err := f.Do(tc.ctx, tc.op)
		if v != "" || !errors.Is(err, tc.want) {
			t.Errorf("%s: got %q, %v; want no value and the caller's %v", tc.name, v, err, tc.want)
		}
		if _, opErr := tc.op(tc.ctx); !errors.Is(err, opErr) {
			t.Errorf("%s: %v does not match the operation's error %v", tc.name, err, opErr)
		}
	}
	if events != 0 {
		t.Fatalf("%d fallback events; want none", events)
	}
}
