package dbguard

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// Classify returns the verdict on err. Wrapped errors are unwrapped
// (fmt.Errorf %w, errors.Join, the drivers' own wrappers). See the package
// documentation for the rules.
func Classify(err error) Classification {
	return classify(err, nil)
}

// ClassifyContext is Classify for an error returned by a call made with
// ctx. It tells apart what the error alone cannot: a statement the server
// stopped (57014 query_canceled, MySQL 1317) after ctx was cancelled, as
// happens with pgx's CancelRequestContextWatcherHandler, is the caller's
// cancellation rather than a statement timeout; a connection lost after
// ctx ended was lost to the cancellation or the deadline. Other errors are
// classified as by Classify.
func ClassifyContext(ctx context.Context, err error) Classification {
	if err == nil {
		return Classification{}
	}
	return classify(err, ctx.Err())
}

// classify applies the rules in order: a server's code wins; then the
// caller's cancellation; then what the client libraries and the transport
// say. ctxErr is the calling context's error, if known.
func classify(err, ctxErr error) Classification {
	if err == nil {
		return Classification{}
	}
	canceled := errors.Is(err, context.Canceled)
	ctxCanceled := errors.Is(ctxErr, context.Canceled)
	v := Classification{NothingSent: nothingSent(err)}

	if r, code, ok := serverRule(err); ok {
		v.Code = code
		applyRule(&v, r, canceled || ctxCanceled)
		return v
	}

	// The context explains a broken connection, not any error at all.
	lost := isConnectionLost(err)
	switch {
	case canceled || ctxCanceled && lost:
		v.Class, v.Canceled = ClassCaller, true
	case errors.Is(err, ErrAmbiguous): // MarkAmbiguous's, or a wrapper's that knows the statement was sent
		v.Class, v.NothingSent = ClassAmbiguous, false
	case isCallerClientError(err):
		v.Class = ClassCaller
	case isConnectAttempt(err):
		v.Class, v.Timeout = ClassConnection, isTimeout(err)
	case isTimeout(err) || errors.Is(ctxErr, context.DeadlineExceeded) && lost:
		v.Timeout = true
		if v.NothingSent {
			v.Class = ClassOther // the deadline passed before the call reached the server
		} else {
			v.Class = ClassAmbiguous // the driver dropped the connection under a sent statement
		}
	case v.NothingSent:
		v.Class = ClassConnection
	case lost:
		v.Class = ClassAmbiguous
	default:
		v.Class = ClassOther
	}
	return v
}

// serverRule finds the server's error in err's chain and returns its rule
// and code.
func serverRule(err error) (rule, string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return sqlstateRule(pgErr.Code), pgErr.Code, true
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return mysqlRule(myErr), strconv.Itoa(int(myErr.Number)), true
	}
	return ruleNone, "", false
}

// The pauses of back-pressure. No database says how long to wait.
const (
	// fullPause follows a "server is full" error: a slot frees when some
	// other session ends, so the pause is long enough that a pool above the
	// server's limit makes about one attempt a second, and short against
	// typical request deadlines. A pause that escalates on repeated signals
	// stretches it further.
	fullPause = time.Second
	// startupPause follows 57P03 cannot_connect_now: a starting server
	// typically accepts within a fraction of a second, so waiting long
	// would delay recovery after a restart.
	startupPause = 100 * time.Millisecond
)

// applyRule sets v's class and the bits the rule decides.
func applyRule(v *Classification, r rule, canceled bool) {
	switch r {
	case ruleFull, ruleStartup:
		v.Class, v.NothingSent, v.Pause = ClassBackPressure, true, fullPause
		if r == ruleStartup {
			v.Pause = startupPause
		}
	case ruleConnection:
		v.Class = ClassConnection
	case ruleConnectFailed:
		v.Class, v.NothingSent = ClassConnection, true
	case ruleTxRetryable:
		v.Class = ClassTxRetryable
	case ruleAmbiguous:
		v.Class, v.NothingSent = ClassAmbiguous, false
	case ruleCaller:
		v.Class = ClassCaller
	case ruleReadOnly:
		v.Class = ClassReadOnly
	case ruleAuth:
		v.Class, v.Auth = ClassCaller, true
	case ruleStatementCanceled:
		if canceled {
			v.Class, v.Canceled = ClassCaller, true
		} else {
			v.Class, v.Timeout = ClassOther, true
		}
	default:
		v.Class = ClassOther
	}
}
