package respool

import "testing"

// TestForReads: a DSN that asks for a server that may be read-only makes a
// Connector that a read-only server does not disturb.
func TestForReads(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://u@a,b/db": false,
		"postgres://u@a,b/db?target_session_attrs=read-write":     false,
		"postgres://u@a,b/db?target_session_attrs=primary":        false,
		"postgres://u@a,b/db?target_session_attrs=read-only":      true,
		"postgres://u@a,b/db?target_session_attrs=standby":        true,
		"postgres://u@a,b/db?target_session_attrs=prefer-standby": true,
		"postgres://u@a,b/db?target_session_attrs=any":            true,
		"host=a,b user=u target_session_attrs = any":              true,
		"host=a user=u target_session_attrs=read-only":            true,
	} {
		if got := forReads(Config{DriverName: "pgx", DSN: dsn}); got != want {
			t.Errorf("forReads(%q) = %v, want %v", dsn, got, want)
		}
	}
	if forReads(Config{DriverName: "mysql", DSN: "u@tcp(a)/db"}) {
		t.Error("a mysql DSN is for reads")
	}
}
