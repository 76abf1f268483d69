package respool

import (
	"context"
	"database/sql/driver"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"

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
// Config.CancelWait, cancelHandler). It returns false for any other driver, a DSN its
// parser refuses (the real driver reports that on connecting, as before),
// a go-sql-driver/mysql network other than tcp, tcp4, tcp6 and unix (one
// that mysql.RegisterDialContext may serve), and when both waits are off.
// It also returns the passwords the driver's parser read, when it read the
// DSN: the definition of where the password is, which the errors of the
// connections are redacted of (besides the widest reading of the DSN).
func dialedConnector(cfg Config) (c driver.Connector, passwords []string, ok bool) {
	cancelWait, endWait := orDefault(cfg.CancelWait, defaultCancelWait), orDefault(cfg.SessionEndWait, defaultSessionEndWait)
	switch cfg.DriverName {
	case "pgx", "pgx/v5":
		pc, err := pgx.ParseConfig(cfg.DSN)
		if err != nil {
			return nil, nil, false
		}
		passwords = append(passwords, pc.Password)
		if cancelWait < 0 && endWait < 0 {
			return nil, passwords, false
		}
		return pgxConnector(pc, cancelWait, endWait), passwords, true
	case "mysql":
		mc, err := mysql.ParseDSN(cfg.DSN)
		if err != nil {
			return nil, nil, false
		}
		passwords = append(passwords, mc.Passwd)
		switch mc.Net {
		case "tcp", "tcp4", "tcp6", "unix":
		default:
			return nil, passwords, false
		}
		if endWait < 0 {
			return nil, passwords, false
		}
		var d net.Dialer // as go-sql-driver/mysql dials by default
		mc.DialFunc = wireDial(d.DialContext, endWait, mysqlRefusals(mc))
		c, err := mysql.NewConnector(mc)
		return c, passwords, err == nil
	}
	return nil, nil, false
}

// pgxConnector returns pgx's connector for pc with respool's cancel handler
// (cancelWait, when on) and dial function (wireDial, when endWait is on),
// which sends no cancel request for a connection that never finished its
// startup (see startedCancelsOnly).
func pgxConnector(pc *pgx.ConnConfig, cancelWait, endWait time.Duration) driver.Connector {
	if cancelWait > 0 {
		setPgTimeout(&pc.Config)
		pc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return newCancelHandler(c, cancelWait)
		}
	}
	if endWait > 0 {
		pc.DialFunc = wireDial(pc.DialFunc, endWait, pgProtocol)
	}
	return stdlib.GetConnector(*pc, stdlib.OptionBeforeConnect(startedCancelsOnly))
}

// startedCancelsOnly is the BeforeConnect of respool's pgx connector: it
// gives one connection attempt of the pool (a context from withDialLog) a
// dial function of its own that sends no cancel request before the
// attempt's connection finished its startup (see
// pgxdial.StartedCancelsOnly). A dial with the attempt's context is the
// attempt's own.
func startedCancelsOnly(ctx context.Context, cc *pgx.ConnConfig) error {
	preferHost(ctx, &cc.Config)
	if attempt, _ := ctx.Value(dialLogKey{}).(*dialLog); attempt != nil {
		_, addr := pgconn.NetworkAddress(cc.Host, cc.Port)
		attempt.enter(addr, phaseDial) // pgx resolves the host before it dials
		pgxdial.StartedCancelsOnly(cc, func(ctx context.Context) bool { return ctx.Value(dialLogKey{}) == attempt })
	}
	return nil
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
