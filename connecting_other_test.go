//go:build !linux

package respool

import "testing"

// unacceptedAddr: a full accept queue is made on Linux only (see
// connecting_linux_test.go); elsewhere the dial phase is not tested.
func unacceptedAddr(*testing.T) (string, bool) { return "", false }
