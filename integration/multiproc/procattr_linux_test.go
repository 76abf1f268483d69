package multiproc

import "syscall"

// workerProcAttr kills a worker when the test process dies.
func workerProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
