package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// configError is a driver's error that keeps its connection config, as
// pgx's *pgconn.ConnectError does: a func JSON cannot marshal, and a
// password.
type configError struct {
	Dial     func() time.Time
	Password string
}

func (e *configError) Error() string { return "failed to connect: connection refused" }

// Stats marshal to JSON whatever the factory's error holds:
// LastCreateError is its message (json.Marshal failed with "json:
// unsupported type: func() time.Time", and would have shown the
// password), and errors.As and printing see the factory's error.
func TestStatsMarshalJSONWithAnyCreateError(t *testing.T) {
	h := newHarness(t, Config{MaxObjects: 1, BackoffDisabled: true})
	boom := &configError{Dial: time.Now, Password: "Zq9Pw"}
	h.f.set(func(f *fakeFactory) { f.createErr = boom })
	if _, err := h.p.Take(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Take = %v, want the factory's error", err)
	}
	s := h.p.Stats()
	var got *configError
	if !errors.As(s.LastCreateError, &got) || got != boom {
		t.Errorf("errors.As(LastCreateError) = %v; want the factory's error", s.LastCreateError)
	}
	for _, verb := range []string{"%v", "%s", "%+v"} {
		if a, b := fmt.Sprintf(verb, s.LastCreateError), fmt.Sprintf(verb, boom); a != b {
			t.Errorf("%s of LastCreateError = %q, want the factory error's %q", verb, a, b)
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("json.Marshal(Stats): %v", err)
	}
	if !strings.Contains(string(b), `"LastCreateError":"failed to connect: connection refused"`) || strings.Contains(string(b), "Zq9Pw") {
		t.Errorf("JSON = %s; want LastCreateError as its message, without the password", b)
	}
}
