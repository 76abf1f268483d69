package fallback_test

import (
	"context"
	"errors"
	"testing"

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
