package respool

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeQuickStartBuilds builds the README's Quick start program (its
// first Go block, a package main) against this module, as a reader who
// copies it would: the program it showed called Lookup("orders").Stats(),
// which dereferenced nil as soon as respool_name left the DSN.
func TestReadmeQuickStartBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program with the go command")
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	quick := string(b)
	if i := strings.Index(quick, "\n## Quick start"); i >= 0 {
		quick = quick[i:]
	}
	start := strings.Index(quick, "```go\npackage main\n")
	if start < 0 {
		t.Fatal("README.md has no Go block with a package main after ## Quick start")
	}
	code := quick[start+len("```go\n"):]
	code = code[:strings.Index(code, "```")]
	if strings.Contains(code, "Lookup(") {
		t.Error("the Quick start still finds its pool with Lookup, which returns nil for a pool it cannot name")
	}

	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// An overlay puts the program in a folder of this module that does not
	// exist on disk, so that it builds against this checkout.
	tmp := t.TempDir()
	src := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(src, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(wd, "readmequickstart", "main.go"): src}})
	if err != nil {
		t.Fatal(err)
	}
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gobin, "build", "-overlay", ov, "-o", os.DevNull, "./readmequickstart")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's Quick start does not build: %v\n%s\n%s", err, out, code)
	}
}
