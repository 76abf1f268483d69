package respool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/internal/pgxdial"
)

// Defaults of Config.CancelWait and Config.SessionEndWait.
const (
	// defaultCancelWait is how long a pgx statement whose context ended
	// waits for PostgreSQL to confirm that it stopped the statement, after
	// which the connection is closed instead. A cancel request is a new TCP
	// connection to the server, which forks a process to signal the session:
	// milliseconds on a healthy server, so 500ms only runs out on one that
	// does not answer, where it is what a call may take past its deadline.
	defaultCancelWait = 500 * time.Millisecond
	// defaultSessionEndWait is how long a closed connection keeps its slot
	// while the server ends its session: as long as a cancelled MySQL
	// statement still runs, or pgx's goodbye takes on a slow server. It
	// bounds the time a slot is held for a server that never answers.
	defaultSessionEndWait = 5 * time.Second
)

// dialedConnector returns the real driver's connector for a pgx or
// go-sql-driver/mysql DSN, built from the DSN as the driver's own parser
// reads it, with respool's dial function (wireDial: the sockets respool
// watches) and, for pgx, cancel requests on a context's end (see
// Config.CancelWait, cancelHandler), and the Config's hook
// (PgxBeforeConnect, MySQLBeforeConnect) before each attempt. It returns
// false for any other driver, a DSN its parser refuses (the real driver
// reports that on connecting, as before; with a hook, NewConnector refuses
// it), and, without a hook, a go-sql-driver/mysql network other than tcp,
// tcp4, tcp6 and unix (one that mysql.RegisterDialContext may serve) and
// when both waits are off. It also returns the passwords the driver's
// parser read, when it read the DSN: the definition of where the password
// is, which the errors of the connections are redacted of (besides the
// widest reading of the DSN).
func dialedConnector(cfg Config) (c driver.Connector, passwords []string, ok bool) {
	cancelWait, endWait := orDefault(cfg.CancelWait, defaultCancelWait), orDefault(cfg.SessionEndWait, defaultSessionEndWait)
	switch cfg.DriverName {
	case "pgx", "pgx/v5":
		pc, err := pgx.ParseConfig(cfg.DSN)
		if err != nil {
			return nil, nil, false
		}
		passwords = append(passwords, pc.Password)
		if cancelWait < 0 && endWait < 0 && cfg.PgxBeforeConnect == nil && cfg.PgBouncer == "" {
			return nil, passwords, false
		}
		pgbouncerConnConfig(cfg.PgBouncer, pc, cfg.DSN)
		return pgxConnector(pc, pgxPieces{cancelWait: cancelWait, endWait: endWait, pgbouncer: cfg.PgBouncer}, cfg.PgxBeforeConnect), passwords, true
	case "mysql":
		mc, err := mysql.ParseDSN(cfg.DSN)
		if err != nil {
			return nil, nil, false
		}
		passwords = append(passwords, mc.Passwd)
		switch {
		case mc.Net != "tcp" && mc.Net != "tcp4" && mc.Net != "tcp6" && mc.Net != "unix", endWait < 0:
			if cfg.MySQLBeforeConnect == nil {
				return nil, passwords, false
			}
		default:
			var d net.Dialer // as go-sql-driver/mysql dials by default
			mc.DialFunc = wireDial(d.DialContext, endWait, mysqlRefusals(mc))
		}
		if err := mc.Apply(mysql.BeforeConnect(mysqlBeforeConnect(cfg.MySQLBeforeConnect))); err != nil {
			return nil, passwords, false
		}
		c, err := mysql.NewConnector(mc)
		return c, passwords, err == nil
	}
	return nil, nil, false
}

// hookedDSNError is the error of a Config with a BeforeConnect hook whose
// DSN its driver's parser refuses (dialedConnector's only failure then),
// redacted of secrets; nil without a hook.
func hookedDSNError(cfg Config, secrets dsnform.Secrets) error {
	var err error
	switch {
	case cfg.PgxBeforeConnect != nil:
		_, err = pgx.ParseConfig(cfg.DSN)
	case cfg.MySQLBeforeConnect != nil:
		_, err = mysql.ParseDSN(cfg.DSN)
	default:
		return nil
	}
	if err == nil {
		err = errors.New("the driver refused the config") // mysql.NewConnector or Apply: not expected
	}
	return fmt.Errorf("%w: DSN (for the BeforeConnect hook): %w", ErrInvalidConfig, secrets.Redact(err))
}

// pgxPieces are the settings of respool's pieces on a pgx connection.
type pgxPieces struct {
	cancelWait, endWait time.Duration // Config.CancelWait and SessionEndWait, or their defaults; negative: off
	pgbouncer           string        // Config.PgBouncer
}

// pgxConnector returns pgx's connector for pc whose BeforeConnect (see
// pgxBeforeConnect) gives each attempt hook's changes, then respool's
// cancel handler (cancelWait, when on) and dial function (wireDial, when
// endWait is on), which sends no cancel request for a connection that
// never finished its startup (see pgxdial.StartedCancelsOnly).
func pgxConnector(pc *pgx.ConnConfig, pieces pgxPieces,
	hook func(context.Context, *pgx.ConnConfig) error) driver.Connector {
	if pieces.cancelWait > 0 {
		setPgTimeout(&pc.Config)
	}
	return stdlib.GetConnector(*pc, stdlib.OptionBeforeConnect(pgxBeforeConnect(hook, pieces)))
}

// pgxBeforeConnect is the BeforeConnect of respool's pgx connector. For
// one connection attempt, on pgx stdlib's shallow copy of the connector's
// config: with a hook, it makes the copy deep (pgx.ConnConfig.Copy: its
// maps, TLS configs and fallbacks are the attempt's own, so that the
// hook's changes do not reach the next attempt) and runs the hook with the
// attempt's context; it notes the attempt's user, address and password for
// its errors (see attemptCreds); then it puts respool's pieces on top of
// what the hook left: the cancel handler (cancelWait on) replaces
// BuildContextWatcherHandler, wireDial (endWait on) wraps DialFunc, and,
// for an attempt of the pool (a context from withDialLog), a dial function
// that sends no cancel request before the attempt's connection finished
// its startup (see pgxdial.StartedCancelsOnly): a dial with the attempt's
// context is the attempt's own. Behind PgBouncer in transaction mode, an
// attempt whose hook chose a query mode that does not work there fails.
func pgxBeforeConnect(hook func(context.Context, *pgx.ConnConfig) error, pieces pgxPieces) func(context.Context, *pgx.ConnConfig) error {
	cancelWait, endWait := pieces.cancelWait, pieces.endWait
	return func(ctx context.Context, cc *pgx.ConnConfig) error {
		creds, _ := ctx.Value(attemptCredsKey{}).(*attemptCreds)
		if hook != nil {
			*cc = *cc.Copy()
			err := hook(ctx, cc)
			preferHost(ctx, &cc.Config)
			parkOn(ctx, &cc.Config)
			creds.note(cc.User, pgAddr(cc), cc.Password, true)
			if err != nil {
				return err
			}
			if pieces.pgbouncer == pgbouncerTransaction {
				if err := pgbouncerExecMode(cc.DefaultQueryExecMode); err != nil {
					return fmt.Errorf("respool: PgxBeforeConnect set DefaultQueryExecMode %v, which, with PgBouncer %q (respool_pgbouncer), %w", cc.DefaultQueryExecMode, pieces.pgbouncer, err)
				}
			}
		} else {
			preferHost(ctx, &cc.Config) // the host the watch found taking writes first (see primaryWatch)
			parkOn(ctx, &cc.Config)
			creds.note(cc.User, pgAddr(cc), "", false)
		}
		if cancelWait > 0 {
			cc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
				return newCancelHandler(c, cancelWait, pieces.pgbouncer != "")
			}
		}
		if endWait > 0 {
			cc.DialFunc = wireDial(cc.DialFunc, endWait, pgProtocol)
		}
		if attempt, _ := ctx.Value(dialLogKey{}).(*dialLog); attempt != nil {
			_, addr := pgconn.NetworkAddress(cc.Host, cc.Port)
			attempt.enter(addr, phaseDial) // pgx resolves the host before it dials
			pgxdial.StartedCancelsOnly(cc, func(ctx context.Context) bool { return ctx.Value(dialLogKey{}) == attempt })
		}
		return nil
	}
}

// pgAddr is the first address cc dials, host:port or a Unix socket's
// path, with ", ..." when it lists fallbacks.
func pgAddr(cc *pgx.ConnConfig) string {
	network, addr := pgconn.NetworkAddress(cc.Host, cc.Port)
	if network == "tcp" {
		addr = net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	}
	if len(cc.Fallbacks) > 0 {
		addr += ", ..."
	}
	return addr
}

// mysqlBeforeConnect is the BeforeConnect of respool's go-sql-driver/mysql
// connector: on the driver's copy of the connector's config for one
// attempt (mysql.Config.Clone), it runs hook, when set, with the attempt's
// context, and notes the attempt's user, address and password for its
// errors (see attemptCreds). The connection is dialed with the connector's
// DialFunc and Timeout, respool's: a hook's DialFunc is not used.
func mysqlBeforeConnect(hook func(context.Context, *mysql.Config) error) func(context.Context, *mysql.Config) error {
	return func(ctx context.Context, mc *mysql.Config) error {
		creds, _ := ctx.Value(attemptCredsKey{}).(*attemptCreds)
		if hook == nil {
			creds.note(mc.User, mc.Addr, "", false)
			return nil
		}
		err := hook(ctx, mc)
		creds.note(mc.User, mc.Addr, mc.Passwd, true)
		return err
	}
}

// orDefault returns d, or def when d is zero; negative means off.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// mysqlRefusals returns the protocol of mc's connections: with
// rejectReadOnly=true and without multiStatements, a driver.ErrBadConn
// after the statement was sent is the server's refusal of a write on a
// read-only server, which database/sql may run again on another
// connection, as the driver documents (see protocol.refusedBadConn).
func mysqlRefusals(mc *mysql.Config) protocol {
	p := mysqlProtocol
	p.refusedBadConn = mc.RejectReadOnly && !mc.MultiStatements
	p.multiStatements = mc.MultiStatements
	return p
}
