//go:build !linux

package multiproc

import "syscall"

// workerProcAttr: only Linux kills a worker when the test process dies.
func workerProcAttr() *syscall.SysProcAttr { return nil }
