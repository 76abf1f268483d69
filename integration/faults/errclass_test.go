package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/respool/respool/dbguard"
	rpool "github.com/respool/respool/pool"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
)

// errorClass names the kind of an error a caller saw, for the report:
// "deadline" (the call's context ended), the server's back-pressure with its
// code ("server limit 53300"), dbguard's class otherwise, with the server's
// code when there is one, and for errors dbguard does not know (respool's
// own, for one), the innermost error's message.
func errorClass(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline"
	}
	if name := respoolError(err); name != "" {
		return name
	}
	c := dbguard.Classify(err)
	switch {
	case c.Class == dbguard.ClassBackPressure:
		return "server limit " + c.Code
	case c.Timeout:
		return "timeout"
	case c.Class == dbguard.ClassOther && c.Code == "":
		return "other: " + innermost(err).Error()
	case c.Code != "":
		return c.Class.String() + " " + c.Code
	}
	return c.Class.String()
}

// respoolError names respool's own errors by kind, without the figures
// their messages hold (so that they group), or returns "".
func respoolError(err error) string {
	var ce *rpool.CreateError
	switch {
	case errors.Is(err, breaker.ErrOpen), errors.Is(err, breaker.ErrHalfOpenFull):
		return "circuit open"
	case errors.Is(err, pause.ErrPaused):
		return "paused"
	case errors.Is(err, rpool.ErrOverloaded):
		return "overloaded"
	case errors.Is(err, rpool.ErrQueueFull):
		return "queue full"
	case errors.Is(err, rpool.ErrAcquireTimeout):
		return "acquire timeout"
	case errors.As(err, &ce) && ce.FailedFast:
		return "failed fast (" + errorClass(ce.Err) + ")"
	}
	return ""
}

// innermost follows err's first wrapped error to the end.
func innermost(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				next = es[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
}

// errorShares formats the classes of the failed calls among calls, most
// frequent first, as shares of all calls: "deadline 12%, connection 3%".
func errorShares(calls []call) string {
	counts := map[string]int{}
	for _, c := range calls {
		if c.class != "" {
			counts[c.class]++
		}
	}
	if len(counts) == 0 {
		return "none"
	}
	classes := make([]string, 0, len(counts))
	for k := range counts {
		classes = append(classes, k)
	}
	slices.SortFunc(classes, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range classes {
		parts = append(parts, fmt.Sprintf("%s %s", k, percent(counts[k], len(calls))))
	}
	return strings.Join(parts, ", ")
}
