package respoolotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/pool"
	"github.com/respool/respool/resilience"
)

// The spans' names.
const (
	takeSpan   = "respool.take"
	createSpan = "respool.create"
)

// tracing makes the spans of a pool's takes and creations (see
// Config.TracerProvider): only under a caller's span, so that the pool's
// own work (MinIdle's creations, a health probe without a span) starts no
// trace.
type tracing struct {
	tracer   trace.Tracer
	poolName attribute.KeyValue
}

// taking starts the span of a take: the waiting callers it queues behind
// if it cannot be served at once (respool.take.waiting).
func (tr tracing) taking(ctx context.Context, waiting int) (context.Context, func(error)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, noEnd
	}
	ctx, span := tr.tracer.Start(ctx, takeSpan, trace.WithAttributes(tr.poolName, attribute.Int("respool.take.waiting", waiting)))
	return ctx, func(err error) { end(span, err) }
}

// creating starts the span of a creation, under the take's it is made for.
func (tr tracing) creating(ctx context.Context) (context.Context, func(error)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, noEnd
	}
	ctx, span := tr.tracer.Start(ctx, createSpan, trace.WithAttributes(tr.poolName))
	return ctx, func(err error) { end(span, err) }
}

func noEnd(error) {}

// end ends span with err's outcome: status Error, the error recorded and
// error.type (see errorType).
//
// And what the pool and its mechanisms knew: the creations failed in a
// row (respool.create.failures) and when the next is attempted
// (respool.retry_at) for a take failed by creations, the mechanism that
// refused (respool.rejected_by: breaker, pause, ratelimit, failover, …).
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attribute.String("error.type", errorType(err)))
		var ce *pool.CreateError
		if errors.As(err, &ce) {
			span.SetAttributes(attribute.Int("respool.create.failures", ce.Failures))
		}
		var re *resilience.RejectedError
		if errors.As(err, &re) {
			span.SetAttributes(attribute.String("respool.rejected_by", re.Mechanism))
		}
		if at, ok := resilience.RetryAfter(err); ok && !at.IsZero() {
			span.SetAttributes(attribute.String("respool.retry_at", at.UTC().Format(time.RFC3339Nano)))
		}
	}
	span.End()
}

// errorType is a take's or a creation's error as error.type, low in
// cardinality: why the pool failed it (queue_full, overloaded,
// acquire_timeout, failed_fast: the creations fail and the next attempt
// comes after its deadline, closed), why a mechanism refused it
// (rejected: the breaker, the pause, the rate limiter, no writable
// server), the caller's own end (canceled, deadline_exceeded), else the
// class of the server's or the network's error (dbguard.Classify:
// connection, back-pressure, auth, …).
func errorType(err error) string {
	var ce *pool.CreateError
	switch {
	case errors.Is(err, pool.ErrQueueFull):
		return "queue_full"
	case errors.Is(err, pool.ErrOverloaded):
		return "overloaded"
	case errors.Is(err, pool.ErrAcquireTimeout):
		return "acquire_timeout"
	case errors.Is(err, pool.ErrClosed):
		return "closed"
	case errors.As(err, &ce) && ce.FailedFast:
		return "failed_fast"
	case errors.Is(err, resilience.ErrRejected):
		return "rejected"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return dbguard.Classify(err).Class.String()
}
