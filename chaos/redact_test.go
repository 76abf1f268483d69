package chaos

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestWrappedDriverErrorsRedacted: an error of the wrapped driver that
// quotes its DSN reaches the caller without the password, and still
// unwraps to the driver's error.
func TestWrappedDriverErrorsRedacted(t *testing.T) {
	const pw = "hunter2-xyz"
	for _, dsn := range []string{
		"fake:fail-open?password=" + pw,
		"app:" + pw + "@tcp(h)/fail-open",
		"postgres://app:" + pw + "@h/fail-open",
		"host=h password=" + pw + " dbname=fail-open",
	} {
		c, err := NewConnector(Config{DriverName: fakeName, DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Connect(ctxT(t))
		c.Close()
		if err == nil || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "fake: cannot open") {
			t.Errorf("%q: Connect = %v, want the driver's error without the password", dsn, err)
		}
		if errors.Unwrap(err) == nil {
			t.Errorf("%q: the driver's error is not reachable", dsn)
		}
	}
}

// TestSecretsOf: the secrets a Connector keeps are the DSN's password,
// decoded and as written, and the one its driver's parser read.
func TestSecretsOf(t *testing.T) {
	c, err := NewConnector(Config{DriverName: "pgx", DSN: "postgres://u:p%40ss%2Fword@h/db?sslpassword=key-pw"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, want := range []string{"p@ss/word", "p%40ss%2Fword", "key-pw"} {
		if !slices.Contains(c.secrets, want) {
			t.Errorf("secrets = %q, want %q among them", c.secrets, want)
		}
	}
	c, err = NewConnector(Config{DriverName: "mysql", DSN: "u:ab@tcp(h)/db"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if len(c.secrets) != 0 {
		t.Errorf("secrets of a 2-byte password = %q: too short to search for", c.secrets)
	}
}

// TestParseErrorsRedacted: the wrapped driver's own parser rejects a DSN
// without showing its password.
func TestParseErrorsRedacted(t *testing.T) {
	const pw = "hunter2-xyz"
	for _, tc := range []struct{ driver, dsn string }{
		{"pgx", "postgres://app:" + pw + "@h:notaport/db"},
		{"pgx", "host=h password=" + pw + " port=notaport"},
		{"mysql", "app:" + pw + "@tcp(h)/db?timeout=forever"},
		{"mysql", "app:" + pw + "@tcp(h)"},
	} {
		_, err := NewConnector(Config{DriverName: tc.driver, DSN: tc.dsn})
		if err == nil || strings.Contains(err.Error(), pw) {
			t.Errorf("%s %q: NewConnector = %v, want an error without the password", tc.driver, tc.dsn, err)
		}
	}
}
