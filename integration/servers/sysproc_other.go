//go:build !linux

package servers

import "syscall"

// sysProcAttr runs a child as cred (nil: ourselves). Without Linux's
// Pdeathsig, a crashed run may leave a server running.
func sysProcAttr(cred *syscall.Credential, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// children returns nil: without /proc, the signals of Freeze and Kill
// reach the server's first process only.
func children(int) []int { return nil }

// alive returns false: without /proc, Kill waits for the server's first
// process only.
func alive(int) bool { return false }
