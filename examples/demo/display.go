package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// display writes the demo's output. On a terminal (live) a status line at
// the bottom is redrawn in place and event lines scroll above it; otherwise
// status lines are printed as plain lines, at most one per plainEvery.
type display struct {
	out        io.Writer
	live       bool
	plainEvery time.Duration
	start      time.Time

	mu         sync.Mutex // guards the fields below and writes to out
	status     string     // the live status line shown now
	lastStatus time.Time  // when a plain status line was last printed
}

func newDisplay(out io.Writer, live bool, plainEvery time.Duration) *display {
	return &display{out: out, live: live, plainEvery: plainEvery, start: time.Now()}
}

const clearLine = "\r\033[K"

// printf prints an event line (a trailing newline is added).
func (d *display) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	line := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	if d.live {
		fmt.Fprint(d.out, clearLine+line+"\n"+d.status)
		return
	}
	fmt.Fprintln(d.out, line)
}

// heading prints a step's title.
func (d *display) heading(format string, args ...any) {
	d.printf("")
	d.printf("== "+format, args...)
}

// setStatus shows s as the status line: redrawn in place when live, printed
// when plain and plainEvery has passed since the last one (or force).
func (d *display) setStatus(s string, force bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s = fmt.Sprintf("[%5.1fs] %s", time.Since(d.start).Seconds(), s)
	if d.live {
		d.status = s
		fmt.Fprint(d.out, clearLine+s)
		return
	}
	if force || time.Since(d.lastStatus) >= d.plainEvery {
		d.lastStatus = time.Now()
		fmt.Fprintln(d.out, s)
	}
}

// endStatus leaves the last status line on screen (live) and starts a new
// line under it.
func (d *display) endStatus() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.live && d.status != "" {
		fmt.Fprintln(d.out)
		d.status = ""
	}
}
