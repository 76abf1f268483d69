package pool

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// databasePackages are the packages pool must not link: it knows nothing of
// databases (the database/sql adapter is the root's connFactory).
var databasePackages = []string{"database/sql", "database/sql/driver"}

// deps lists the packages pkg links (go list -deps), itself included.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the dependencies: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestPoolLinksNoDatabaseCode(t *testing.T) {
	// The check can fail: the root package, the driver, links both.
	root := deps(t, "github.com/respool/respool")
	for _, db := range databasePackages {
		if !slices.Contains(root, db) {
			t.Fatalf("go list -deps of the root package does not list %s: the check below would prove nothing", db)
		}
	}
	got := deps(t, ".")
	if !slices.Contains(got, "github.com/respool/respool/pool") {
		t.Fatalf("go list -deps . = %v; want package pool among them", got)
	}
	for _, db := range databasePackages {
		if slices.Contains(got, db) {
			t.Errorf("package pool links %s; it must know nothing of databases", db)
		}
	}
}
