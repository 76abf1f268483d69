package servers

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// sysProcAttr runs a child as cred (nil: ourselves) and sends it sig when
// the test process dies, so a crashed run leaves no server running.
func sysProcAttr(cred *syscall.Credential, sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: sig}
}

// children returns the running processes whose parent is pid, from /proc.
func children(pid int) []int {
	var kids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		if state, ppid, ok := procStat(path); ok && ppid == pid && running(state) {
			kid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			kids = append(kids, kid)
		}
	}
	return kids
}

// alive reports whether process pid is running (a zombie is not).
func alive(pid int) bool {
	state, _, ok := procStat("/proc/" + strconv.Itoa(pid) + "/stat")
	return ok && running(state)
}

func running(state string) bool { return state != "Z" && state != "X" }

// procStat reads the state and parent of a process from its /proc stat
// file: "pid (comm) state ppid ...", where comm may hold spaces and
// parentheses.
func procStat(path string) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, false // exited meanwhile
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return string(f[0]), ppid, err == nil
}
