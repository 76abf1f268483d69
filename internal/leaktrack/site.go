package leaktrack

import (
	"runtime"
	"strconv"
	"strings"
)

// maxDepth bounds a captured stack.
const maxDepth = 32

// Site is where an object was taken: a captured call stack. The zero Site
// (or a nil *Site) means "not captured".
type Site struct {
	pcs []uintptr
}

// Capture records the caller's stack, skipping skip frames above Capture's
// caller (0 records the caller of Capture first).
func Capture(skip int) *Site {
	var buf [maxDepth]uintptr
	n := runtime.Callers(skip+2, buf[:])
	pcs := make([]uintptr, n)
	copy(pcs, buf[:n])
	return &Site{pcs: pcs}
}

// String formats the stack as "function\n\tfile:line" lines, or
// "(stack not captured)".
func (s *Site) String() string {
	if s == nil || len(s.pcs) == 0 {
		return "(stack not captured; enable leak stack capture)"
	}
	var b strings.Builder
	frames := runtime.CallersFrames(s.pcs)
	for {
		f, more := frames.Next()
		b.WriteString(f.Function)
		b.WriteString("\n\t")
		b.WriteString(f.File)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(f.Line))
		if !more {
			break
		}
		b.WriteByte('\n')
	}
	return b.String()
}
