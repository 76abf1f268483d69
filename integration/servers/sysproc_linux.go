package servers

import "syscall"

// sysProcAttr runs a child as cred (nil: ourselves) and sends it sig when
// the test process dies, so a crashed run leaves no server running.
func sysProcAttr(cred *syscall.Credential, sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: sig}
}
