package servers

import (
	"strings"
	"testing"
)

// TestMissingBinaries checks that without Docker and binaries the start
// functions fail with one line saying what to install.
func TestMissingBinaries(t *testing.T) {
	t.Setenv(BackendEnv, BackendLocal)
	t.Setenv("PATH", t.TempDir())
	oldPG, oldMaria := postgresDirs, mariadbDirs
	postgresDirs, mariadbDirs = nil, nil
	t.Cleanup(func() { postgresDirs, mariadbDirs = oldPG, oldMaria })

	for name, start := range map[string]func() (*Server, error){
		"postgres": func() (*Server, error) { return StartPostgres(t.Context()) },
		"mariadb":  func() (*Server, error) { return StartMariaDB(t.Context()) },
	} {
		s, err := start()
		if err == nil {
			s.Stop(t.Context())
			t.Fatalf("%s started without binaries", name)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "apt-get install") {
			t.Errorf("%s: error is not one line naming what to install: %q", name, msg)
		}
	}
}
