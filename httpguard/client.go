package httpguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/breaker"
	"github.com/respool/respool/resilience/pause"
	"github.com/respool/respool/resilience/retry"
)

// maxKeptBody bounds the body of a 429 or 503 answer kept in memory, so
// that its connection goes back to the base transport before any wait.
const maxKeptBody = 64 << 10

// StatusError is a server's 429 or 503 answer, as the Transport's
// mechanisms see it: RetryAt is the time its Retry-After names (zero
// without one).
type StatusError struct {
	Status  int
	RetryAt time.Time
}

func (e *StatusError) Error() string {
	if e.RetryAt.IsZero() {
		return fmt.Sprintf("httpguard: server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("httpguard: server answered %d %s, retry at %s", e.Status, http.StatusText(e.Status), e.RetryAt.Format(time.RFC3339))
}

// RetryAfter returns RetryAt: the protocol of package resilience, which
// retry honours.
func (e *StatusError) RetryAfter() time.Time { return e.RetryAt }

// SlowDown is the classifier of the Transport's pause: a *StatusError
// (429 or 503) asks for the wait of its Retry-After (d is 0, the pause's
// DefaultPause, without one). Give it as pause.Config.Classify to a Pause
// of your own.
func SlowDown(err error) (d time.Duration, ok bool) { return slowDownAt(err, time.Now()) }

// slowDownAt is SlowDown at now: the wait until RetryAt, at least 1ms.
func slowDownAt(err error, now time.Time) (d time.Duration, ok bool) {
	var se *StatusError
	if !errors.As(err, &se) {
		return 0, false
	}
	if !se.RetryAt.IsZero() {
		d = max(se.RetryAt.Sub(now), time.Millisecond)
	}
	return d, true
}

// TransportConfig configures a Transport. Every zero value means the
// default written beside it.
type TransportConfig struct {
	// Base makes the requests. Nil means http.DefaultTransport.
	Base http.RoundTripper
	// MaxAttempts is the most attempts of one request, the first included.
	// Zero means 3.
	MaxAttempts int
	// Pause is the gate shared by every request through the Transport: a
	// 429 or 503 closes it until its Retry-After, and requests wait behind
	// it (bounded by their contexts). Nil means one of its own, on Clock;
	// one given here must classify with SlowDown.
	Pause *pause.Pause
	// Breaker, when set, refuses requests while the server fails: 5xx
	// answers and transport errors are its failures. A refusal is returned
	// as the request's error (a *resilience.RejectedError).
	Breaker *breaker.Breaker
	// Clock is where time is read and waits are set. Nil means
	// clock.System().
	Clock clock.Clock
}

// Transport is an http.RoundTripper that honours a server's 429 and 503
// (see the package documentation). A request is attempted again after a
// 429 or 503 when its body can be sent again (no body, or
// http.Request.GetBody), and after a transport error only when its method
// is idempotent too; the last 429 or 503 is returned as the response when
// attempts run out. Every wait ends with the request's context.
type Transport struct {
	base    http.RoundTripper
	pause   *pause.Pause
	ownsP   bool
	breaker *breaker.Breaker
	retry   *retry.Retry[*http.Response]
	clock   clock.Clock
}

var _ http.RoundTripper = (*Transport)(nil)

// NewTransport validates c and returns a Transport. Close it to stop its
// own pause's timer.
func NewTransport(c TransportConfig) (*Transport, error) {
	t := &Transport{base: c.Base, pause: c.Pause, breaker: c.Breaker, clock: resil.ClockOr(c.Clock)}
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	if t.pause == nil {
		p, err := pause.New(pause.Config{Name: "httpguard", Classify: t.slowDown, Clock: t.clock})
		if err != nil {
			return nil, err
		}
		t.pause, t.ownsP = p, true
	}
	r, err := retry.New(retry.Config[*http.Response]{Name: "httpguard", MaxAttempts: c.MaxAttempts, Clock: t.clock,
		RetryOn: retryable})
	if err != nil {
		return nil, err
	}
	t.retry = r
	return t, nil
}

// slowDown is SlowDown on the Transport's clock.
func (t *Transport) slowDown(err error) (time.Duration, bool) { return slowDownAt(err, t.clock.Now()) }

// Pause returns the Transport's pause, for its State.
func (t *Transport) Pause() *pause.Pause { return t.pause }

// Close stops the timer of the Transport's own pause.
func (t *Transport) Close() {
	if t.ownsP {
		t.pause.Stop()
	}
}

// noRetry marks an attempt's error that must not be retried.
type noRetry struct{ error }

func (e noRetry) Unwrap() error { return e.error }

// retryable says whether an attempt's error may be retried.
func retryable(err error) bool {
	var nr noRetry
	return !errors.As(err, &nr) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// RoundTrip sends req, waiting behind the pause, through the breaker,
// again after a 429 or 503 once its Retry-After has passed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	st := t.retry.Begin()
	for attempt := 0; ; attempt++ {
		resp, err := t.attempt(ctx, req, attempt, replayable)
		if !t.retry.Next(ctx, &st, resp, err) {
			if resp != nil {
				return resp, nil // the last 429 or 503 is the server's own answer
			}
			if nr, ok := err.(noRetry); ok {
				err = nr.error
			}
			return nil, err
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}

// attempt makes one attempt: its response, and for a 429 or 503 a
// *StatusError with it (its body read, the connection released).
func (t *Transport) attempt(ctx context.Context, req *http.Request, n int, replayable bool) (*http.Response, error) {
	pm, err := t.pause.Enter(ctx)
	if err != nil {
		return nil, err
	}
	var bp resilience.Permit
	if t.breaker != nil {
		if bp, err = t.breaker.Enter(ctx); err != nil {
			t.pause.Exit(pm, err)
			return nil, err
		}
	}
	r := req
	if n > 0 {
		r = req.Clone(ctx)
		if req.GetBody != nil {
			if r.Body, err = req.GetBody(); err != nil {
				err = noRetry{fmt.Errorf("httpguard: GetBody: %w", err)}
				t.exit(pm, bp, err)
				return nil, err
			}
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		t.exit(pm, bp, err)
		if !replayable || !idempotent(req.Method) {
			err = noRetry{err}
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		var outcome error
		if resp.StatusCode >= 500 {
			outcome = ErrServerStatus
		}
		t.exit(pm, bp, outcome)
		return resp, nil
	}
	se := &StatusError{Status: resp.StatusCode, RetryAt: retryAt(resp.Header.Get("Retry-After"), t.clock.Now())}
	keepBody(resp)
	t.exit(pm, bp, se)
	if !replayable {
		return resp, noRetry{se}
	}
	return resp, se
}

// exit ends an attempt in the breaker (a 429 is not a failure of the
// server) and in the pause, which holds on a 429 or 503.
func (t *Transport) exit(pm, bp resilience.Permit, err error) {
	if t.breaker != nil {
		var se *StatusError
		outcome := err
		if errors.As(err, &se) && se.Status == http.StatusTooManyRequests {
			outcome = nil
		}
		t.breaker.Exit(bp, outcome)
	}
	t.pause.Exit(pm, err)
}

// keepBody reads resp's body (up to maxKeptBody) into memory and closes it,
// so that its connection is released before any wait.
func keepBody(resp *http.Response) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxKeptBody))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
}

// retryAt reads Retry-After: delay-seconds or an HTTP date; zero when
// absent or malformed.
func retryAt(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return now.Add(time.Duration(min(s, int64(24*time.Hour/time.Second))) * time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return t
	}
	return time.Time{}
}

func idempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}
