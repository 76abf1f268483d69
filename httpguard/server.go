package httpguard

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/respool/respool/clock"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
	"github.com/respool/respool/resilience/ratelimit"
)

// defaultRetryAfter is the Retry-After of a refusal that carries no retry
// time of its own (a full queue, an overloaded pool) when
// ServerConfig.DefaultRetryAfter is zero.
const defaultRetryAfter = time.Second

// ServerConfig configures a Server. Every zero value means the default
// written beside it.
type ServerConfig struct {
	// DefaultRetryAfter is the Retry-After of a refusal without a retry
	// time of its own. Zero means 1s.
	DefaultRetryAfter time.Duration
	// Clock is the time against which a refusal's retry time becomes a
	// number of seconds. Nil means clock.System().
	Clock clock.Clock
	// OnError writes the answer to any other error. Nil means a plain 500
	// "internal server error", without the error's text (it may hold
	// details a client must not see).
	OnError func(w http.ResponseWriter, r *http.Request, err error)
}

// Server answers refusals with 503 or 429 and Retry-After. It is safe for
// concurrent use.
type Server struct {
	c ServerConfig // with defaults
}

// NewServer validates c and returns a Server.
func NewServer(c ServerConfig) (*Server, error) {
	if c.DefaultRetryAfter < 0 {
		return nil, resil.Check(false, "httpguard", "DefaultRetryAfter", c.DefaultRetryAfter, "a duration >= 0 (0: 1s)")
	}
	if c.DefaultRetryAfter == 0 {
		c.DefaultRetryAfter = defaultRetryAfter
	}
	c.Clock = resil.ClockOr(c.Clock)
	return &Server{c: c}, nil
}

// refusal is how a Server answers an error: status (503 or 429) and the
// wait it announces in Retry-After.
type refusal struct {
	status     int
	retryAfter time.Duration
}

// classify returns the answer to err, and false for an error that is not a
// refusal (it then deserves OnError's answer): see WriteError.
func (s *Server) classify(err error) (refusal, bool) {
	var status int
	var ce *pool.CreateError
	var we *pool.WaitError
	switch {
	case err == nil:
		return refusal{}, false
	case errors.Is(err, ratelimit.ErrLimited), errors.Is(err, ratelimit.ErrQueueFull):
		status = http.StatusTooManyRequests
	case errors.Is(err, pool.ErrQueueFull), errors.Is(err, pool.ErrOverloaded), errors.Is(err, pool.ErrAcquireTimeout),
		errors.As(err, &ce), errors.As(err, &we), errors.Is(err, resilience.ErrRejected):
		status = http.StatusServiceUnavailable
	default:
		return refusal{}, false
	}
	d := s.c.DefaultRetryAfter
	if at, ok := resilience.RetryAfter(err); ok {
		d = max(at.Sub(s.c.Clock.Now()), 0)
	}
	return refusal{status: status, retryAfter: d}, true
}

// WriteError answers err. A refusal gets its status and Retry-After: rate
// limiters' rejections (ratelimit.ErrLimited, ratelimit.ErrQueueFull) are
// 429 Too Many Requests; the pool's refusals (ErrQueueFull, ErrOverloaded,
// ErrAcquireTimeout, a *CreateError, a *WaitError) and any other
// resilience rejection (an open breaker, a pause, a full bulkhead) are 503
// Service Unavailable. Retry-After is the time the error carries
// (resilience.RetryAfter) from now, or ServerConfig.DefaultRetryAfter,
// rounded up to whole seconds, at least 1. Any other error goes to
// OnError; the response never carries the error's text.
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	rf, ok := s.classify(err)
	if !ok {
		if s.c.OnError != nil {
			s.c.OnError(w, r, err)
			return
		}
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Retry-After", retryAfterSeconds(rf.retryAfter))
	http.Error(w, http.StatusText(rf.status), rf.status)
}

// retryAfterSeconds formats d as Retry-After's delay-seconds, rounded up
// (a client that comes back early is refused again), at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(int64(math.Ceil(d.Seconds())), 1), 10)
}

// Handler returns an http.Handler that runs fn and answers the error it
// returns with WriteError. fn must not have written a response when it
// returns an error.
func (s *Server) Handler(fn func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			s.WriteError(w, r, err)
		}
	})
}

// Admit returns middleware that admits each request through g (a rate
// limiter, a breaker, a bulkhead, or a stack of them) before next: a
// rejection is answered by WriteError (429 for a rate limiter, 503 for the
// others) and next does not run. g's Exit gets the request's outcome: a
// failure when next answered with a 5xx status.
func (s *Server) Admit(g resilience.Guard) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, err := g.Enter(r.Context())
			if err != nil {
				s.WriteError(w, r, err)
				return
			}
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			defer func() { g.Exit(p, sw.outcome()) }()
			next.ServeHTTP(sw, r)
		})
	}
}

// ErrServerStatus is the failure a guard's Exit gets for a 5xx answer.
var ErrServerStatus = errors.New("httpguard: server error status")

// statusWriter records the status a handler writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the writer's other methods.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) outcome() error {
	if w.status >= 500 {
		return ErrServerStatus
	}
	return nil
}
