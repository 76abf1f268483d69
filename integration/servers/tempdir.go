package servers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const (
	dirPrefix = "respool-servers-"
	ownerFile = "owner.pid" // pid of the test process that owns the directory
)

// makeDir creates the temporary directory of a local server, recording the
// test process as its owner, after removing directories of dead owners.
func makeDir(kind string) (string, error) {
	sweepStale()
	dir, err := os.MkdirTemp("", dirPrefix+kind+"-")
	if err != nil {
		return "", fmt.Errorf("servers: %w", err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(filepath.Join(dir, ownerFile), pid, 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("servers: %w", err)
	}
	return dir, nil
}

// sweepStale removes server directories whose owning test process is gone,
// left behind by runs that crashed before calling Stop. Their servers got
// the parent-death signal when the owner died.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or its owner is still creating it
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(dir)
		}
	}
}
