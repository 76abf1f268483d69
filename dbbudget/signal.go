package dbbudget

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/respool/respool/dbguard"
	"github.com/respool/respool/internal/dsnform"
	"github.com/respool/respool/internal/resil"
	"github.com/respool/respool/resilience"
)

// ShareConfig configures Share. DSN and Name are required; the zero
// values of the others are their documented defaults.
type ShareConfig struct {
	// DSN reaches the PostgreSQL database the processes share (the pools'
	// own DSN will do, respool's keys and all: they are taken out). Its
	// password appears in no error or log. A MySQL or MariaDB DSN is
	// refused: they have no LISTEN/NOTIFY (share the signals through
	// Redis: redisbudget.Share).
	DSN string
	// Name names what the processes share (a database): the signals go on
	// the channel "respool_signal_"+HASH, HASH a hash of Name (the budget's
	// lock spaces' hash). Every process sharing the database gives the
	// same Name.
	Name string
	// Timeout bounds each statement of the signals' session (a NOTIFY);
	// a statement that runs out of it ends the session, dialed again in
	// the background. No caller waits for it. Zero: 1s.
	Timeout time.Duration
	// Logger gets one line when the signals' session is lost (or cannot
	// be opened) and one when it is back. Nil: slog.Default().
	Logger *slog.Logger
}

// Share makes the Guards built from c (a respool Config's Resilience, or
// a dbguard.Config) share, with every Guard of every process that calls
// Share with the same Name and database, what stops a process dialing:
// when one Guard's circuit opens (a dead server, or its statements
// failing) or its creations pause (back-pressure: "too many
// connections"), the others pause their creations as long. c.Join is set:
// each Guard holds a PostgreSQL session of its own while it lives (until
// Close), LISTENs on the Name's channel, and sends its signals there with
// pg_notify.
//
//	cfg, err := respool.ParseDSN(dsn)
//	err = dbbudget.Share(&cfg.Resilience, dbbudget.ShareConfig{DSN: dsn, Name: "orders-db"})
//	c, err := respool.NewConnector(*cfg)
//
// A signal is "v1 ORIGIN KIND MILLISECONDS": the pause's or the open
// circuit's length left when sent, not its end (the processes' clocks
// need not agree); ORIGIN names the sending Guard, which ignores its own.
// A pause received is not sent on, so that a signal goes round once; a
// pause extended by less than 100ms is not sent again; a circuit opened
// for the credentials a process was refused is not sent (the others' may
// be right). A Guard's pause that is off (respool_pause=off) sends its
// signals and applies none.
//
// Nothing is stored in the database (no table): a Guard that joins
// (starts, or has its session back) sends a hello on the channel, and
// each Guard whose own pause or open circuit still holds sends it again,
// so the newcomer is paused too; a Guard that ended meanwhile (its
// process gone) is not heard. A signal sent while the session was lost is
// sent once it is back, if it still holds.
//
// The session is dialed in the background (New does not wait for it;
// each dial bounded by 5s, again after 50ms doubled up to 2s while it
// fails), named "respool signals NAME" (application_name) unless the DSN
// names it; it needs no privilege beyond CONNECT (LISTEN and pg_notify
// need none), and the server's max_connections must allow for it. It
// must reach the server itself or a pooler in session mode: in
// transaction mode LISTEN does not work. Events are sent from the
// Guard's goroutine, never from the caller that met them. Share refuses
// a c already joined (c.Join set).
func Share(c *dbguard.Config, cfg ShareConfig) error {
	sc, err := cfg.parse()
	if err != nil {
		return err
	}
	if c.Join != nil {
		return errors.New("dbbudget: Share: the dbguard.Config has a Join already (Share was called on it before?)")
	}
	c.Join = func(g *dbguard.Guard) (resilience.Listener, func()) { return join(g, sc) }
	return nil
}

// shareConfig is a ShareConfig checked, its DSN read.
type shareConfig struct {
	ShareConfig
	cc      *pgx.ConnConfig
	secrets dsnform.Secrets
	channel string
}

// parse checks c, fills in its defaults and reads its DSN.
func (c ShareConfig) parse() (*shareConfig, error) {
	const mechanism = "dbbudget"
	if err := resil.FirstError(
		resil.Check(c.DSN != "", mechanism, "DSN", `""`, "a DSN of the PostgreSQL database (the pools' DSN will do)"),
		resil.Check(c.Name != "", mechanism, "Name", `""`, "a name every process sharing the database gives"),
		resil.Check(c.Timeout >= 0, mechanism, "Timeout", c.Timeout, "a positive duration, or 0 for 1s"),
	); err != nil {
		return nil, err
	}
	c.Timeout = cmp.Or(c.Timeout, time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	text, err := dsnform.Read(c.DSN, "respool_")
	if err != nil {
		return nil, fmt.Errorf("dbbudget: ShareConfig.DSN: %w", err)
	}
	if text.Form.Driver() != "pgx" {
		return nil, resil.Check(false, mechanism, "DSN", "a MySQL DSN",
			"a PostgreSQL DSN: MySQL and MariaDB have no LISTEN/NOTIFY (share the signals through Redis: redisbudget.Share)")
	}
	cc, secrets, err := pgConfig(text, "respool signals "+c.Name)
	if err != nil {
		return nil, fmt.Errorf("dbbudget: ShareConfig.DSN: %w", err)
	}
	return &shareConfig{ShareConfig: c, cc: cc, secrets: secrets, channel: keysOf(c.Name).signals}, nil
}
