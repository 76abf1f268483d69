//go:build !linux

package servers

import "syscall"

// sysProcAttr runs a child as cred (nil: ourselves). Without Linux's
// Pdeathsig, a crashed run may leave a server running.
func sysProcAttr(cred *syscall.Credential, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
