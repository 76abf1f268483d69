package respool

import (
	"context"
	"database/sql/driver"
	"fmt"
	"log/slog"

	"github.com/respool/respool/internal/dsnform"
)

// connHooks are the hooks of a Config (InitSQL, AfterConnect,
// BeforeAcquire, AfterRelease) as physFactory runs them on the real
// connection inside a physConn. Their errors are redacted of the DSN's
// password.
type connHooks struct {
	initSQL       []string
	afterConnect  func(ctx context.Context, conn driver.Conn) error
	beforeAcquire func(ctx context.Context, conn driver.Conn) error
	afterRelease  func(ctx context.Context, conn driver.Conn) error
	secrets       dsnform.Secrets // of the DSN (see baseConnector)
	logger        *slog.Logger
	poolName      string
}

// afterCreate prepares a new connection: InitSQL, then AfterConnect. An
// error fails the creation.
func (h *connHooks) afterCreate(ctx context.Context, conn driver.Conn) error {
	for _, q := range h.initSQL {
		if err := execSQL(ctx, conn, q); err != nil {
			return h.secrets.Redact(fmt.Errorf("respool: init SQL %q: %w", q, err))
		}
	}
	if h.afterConnect != nil {
		return h.secrets.Redact(h.afterConnect(ctx, conn))
	}
	return nil
}

// refused logs and returns the error of a hook that refused a connection.
func (h *connHooks) refused(hook string, err error) error {
	if err == nil {
		return nil
	}
	err = h.secrets.Redact(err)
	h.logger.Warn("connection refused", "pool", h.poolName, "hook", hook, "error", err)
	return err
}

// execSQL runs query, which takes no arguments, on conn.
func execSQL(ctx context.Context, conn driver.Conn, query string) error {
	if ec, ok := conn.(driver.ExecerContext); ok {
		_, err := ec.ExecContext(ctx, query, nil)
		if err != driver.ErrSkip {
			return err
		}
	}
	var st driver.Stmt
	var err error
	if pc, ok := conn.(driver.ConnPrepareContext); ok {
		st, err = pc.PrepareContext(ctx, query)
	} else {
		st, err = conn.Prepare(query)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	if se, ok := st.(driver.StmtExecContext); ok {
		_, err = se.ExecContext(ctx, nil)
		return err
	}
	//lint:ignore SA1019 the wrapped driver has nothing newer
	_, err = st.Exec(nil)
	return err
}
