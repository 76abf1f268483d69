package respool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/respool/respool/pool"
)

// registerFailing registers the scheme test-failing once (a scheme
// registered twice panics).
var registerFailing sync.Once

// nopBudget is a pool.Budget of slots without end.
type nopBudget struct{}

func (nopBudget) Acquire(context.Context) (func(), error) { return func() {}, nil }

// respool_budget names a budget by its scheme: one no module registered is
// refused by NewConnector with an error that names the key and says which
// module to import, and holds no password.
func TestSharedBudgetOfAnUnregisteredScheme(t *testing.T) {
	cfg, err := ParseDSN("postgres://app:pw@db/app?respool_budget=" +
		"redis%3A%2F%2F%3As3cret%40redis%3A6379%2F0%3Fname%3Dorders%26max%3D200")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SharedBudget != "redis://:s3cret@redis:6379/0?name=orders&max=200" {
		t.Fatalf("SharedBudget = %q", cfg.SharedBudget)
	}
	_, err = NewConnector(*cfg)
	var de *DSNError
	if !errors.As(err, &de) || de.Key != "respool_budget" || !errors.Is(err, ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "redisbudget") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("NewConnector = %v; want a DSNError naming respool_budget and the module to import, without the password", err)
	}
}

// An opener's error is returned with its passwords redacted, and both
// SharedBudget and Pool.Budget set is an error.
func TestSharedBudgetOpenerErrors(t *testing.T) {
	registerFailing.Do(func() {
		RegisterBudget("test-failing", func(spec, _ string) (pool.Budget, error) {
			return nil, fmt.Errorf("cannot reach %s", spec)
		})
	})
	cfg := Config{DriverName: "pgx", DSN: "postgres://app:pw@db/app", SharedBudget: "test-failing://:s3cret@host/"}
	_, err := NewConnector(cfg)
	if err == nil || !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("NewConnector = %v; want the opener's error, redacted", err)
	}
	cfg.Pool.Budget = nopBudget{}
	if _, err := NewConnector(cfg); err == nil || !strings.Contains(err.Error(), "both set") {
		t.Fatalf("NewConnector with both budgets = %v; want refused", err)
	}
}

// The password of a budget URL is not printed by String, %#v or slog.
func TestSharedBudgetPasswordIsRedacted(t *testing.T) {
	cfg := Config{DriverName: "pgx", DSN: "postgres://db/app", SharedBudget: "redis://:s3cret@redis:6379/0?name=o&max=2"}
	var log bytes.Buffer
	slog.New(slog.NewTextHandler(&log, nil)).Info("config", "cfg", cfg)
	for what, s := range map[string]string{"String": cfg.String(), "%#v": fmt.Sprintf("%#v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "slog": log.String()} {
		if strings.Contains(s, "s3cret") || !strings.Contains(s, "6379") {
			t.Errorf("%s = %s; want the budget URL without its password", what, s)
		}
	}
	if got := cfg.FormatDSN(); !strings.Contains(got, "s3cret") {
		t.Errorf("FormatDSN = %s; want the password kept (it is the DSN)", got)
	}
}
