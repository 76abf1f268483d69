package servers

import (
	"os/exec"
	"path/filepath"
	"sort"
)

// Directories searched after PATH, as filepath.Glob patterns; tests may
// override them.
var (
	postgresDirs = []string{"/usr/lib/postgresql/*/bin"}
	mariadbDirs  = []string{"/usr/sbin", "/usr/bin"}
)

// findBinary returns the path of the executable name from PATH or else
// from the directories matching dirs, lexically greatest match first.
func findBinary(name string, dirs []string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, pattern := range dirs {
		matches, _ := filepath.Glob(pattern)
		sort.Sort(sort.Reverse(sort.StringSlice(matches)))
		for _, dir := range matches {
			if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
				return p, true
			}
		}
	}
	return "", false
}
