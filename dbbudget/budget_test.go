package dbbudget_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/respool/respool"
	"github.com/respool/respool/dbbudget"
	"github.com/respool/respool/resilience"
)

// A bad Config is refused by New, each bad field named with what is
// accepted, before any dial. (Its behaviour on real servers is tested in
// integration/dbbudget.)
func TestNewRefusesABadConfig(t *testing.T) {
	const dsn = "postgres://u:pw@127.0.0.1:1/db"
	for _, c := range []struct {
		cfg   dbbudget.Config
		field string
	}{
		{dbbudget.Config{Name: "n", Max: 1}, "DSN"},
		{dbbudget.Config{DSN: dsn, Driver: "sqlite", Name: "n", Max: 1}, "Driver"},
		{dbbudget.Config{DSN: dsn, Max: 1}, "Name"},
		{dbbudget.Config{DSN: dsn, Name: "n"}, "Max"},
		{dbbudget.Config{DSN: dsn, Name: "n", Max: 100001}, "Max"},
		{dbbudget.Config{DSN: dsn, Name: "n", Max: 1, Timeout: -1}, "Timeout"},
		{dbbudget.Config{DSN: dsn, Name: "n", Max: 1, Timeout: 2e9}, "Timeout"},
	} {
		b, err := dbbudget.New(context.Background(), c.cfg)
		var ce *resilience.ConfigError
		if b != nil || !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.field) {
			t.Errorf("New(%+v) = %v, %v; want a ConfigError naming %s", c.cfg, b, err, c.field)
		}
	}
}

// A DSN its driver cannot read, or a server that cannot be reached, is
// New's error, and the password is in none of its forms.
func TestNewErrorsHideThePassword(t *testing.T) {
	const secret = "S3cretPw-xyz"
	for _, dsn := range []string{
		"postgres://u:" + secret + "@127.0.0.1:1/db?sslmode=disable&connect_timeout=1",
		"postgres://u:" + secret + "@127.0.0.1:1/db?sslmode=nonsense",
		"host=127.0.0.1 port=1 user=u password=" + secret + " sslmode=disable connect_timeout=1",
		"u:" + secret + "@tcp(127.0.0.1:1)/db?timeout=1s",
		"u:" + secret + "@tcp(127.0.0.1:1)/db?timeout=nonsense",
		"postgres://u:" + secret + "@127.0.0.1:1/db?sslmode=disable&respool_max_conns=4&connect_timeout=1",
	} {
		b, err := dbbudget.New(context.Background(), dbbudget.Config{DSN: dsn, Name: "n", Max: 2})
		if b != nil || err == nil {
			t.Fatalf("New with %s = %v, %v; want an error", respool.RedactDSN(dsn), b, err)
		}
		for _, form := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(form, secret) {
				t.Errorf("New's error shows the password: %s", form)
			}
		}
	}
}
