package respool

import (
	"context"
	"database/sql/driver"

	"github.com/respool/respool/internal/dsnform"
)

// RedactDSN returns dsn with its passwords replaced by "xxxxx", for logs and
// errors. A password may hold separators that its writer forgot to encode
// (postgres://u:p@ss/w?rd@host/db), and drivers disagree on where such a
// password ends (libpq and pgx: at the first '@' before any '/'; net/url: at
// the last '@' before the path; go-sql-driver/mysql: at the last '@' before
// the last '/'), so RedactDSN replaces the widest reading:
//
//   - URL: the password of the user information (user:password@), and the
//     values of password-like query parameters. When an '@' follows the user
//     information as libpq reads it, and either that user information holds
//     a password or the rest does not read as plain hosts, ports (numbers),
//     path and a query of key=value pairs with plain keys (letters, digits,
//     '_', '.', '-'), the password is taken to run from the first ':' to the
//     last '@' of the DSN. A DSN with a password and an '@' in a query value
//     (application_name=a@b) therefore keeps only what follows that '@'.
//   - keyword/value: the values of password-like keys, as libpq reads
//     them, and the password of a value that reads "password=..." (libpq
//     reads "user= password=x" as the user "password=x", and shows it as
//     the user). Everything from a malformed element (an unterminated
//     quote) on is replaced.
//   - mysql: the password of user:password@ (before the last '@' that is
//     before the last '/'), or of a scheme://user:password@host DSN of
//     another driver, and the values of password-like query parameters.
//     When an '@' follows, and a ':' precedes it or the '@'s are not all in
//     a well-formed query, the widest reading as for a URL.
//
// The password-like keys are password, sslpassword, passwd, pwd, pass,
// _auth_pass and oauth_client_secret, in any case. Such a value in a query,
// or unquoted in the keyword/value form, runs over the parameters after it
// that no driver reads: an element without '=', or one whose key is not a
// parameter of libpq, pgx, go-sql-driver/mysql or respool
// (?password=a&Pw=1 has the password "a&Pw=1"). A DSN without a password is
// returned unchanged. The redacted DSN is for reading, not for connecting.
func RedactDSN(dsn string) string { return dsnform.Redact(dsn) }

// redactingConnector removes the DSN's passwords from connection errors, so
// that neither the caller nor the pool (its Stats, its log) sees them (see
// dsnform.Secrets.Redact): an error whose message and values show none is
// returned as it is (type assertions keep working); any other is wrapped,
// its message redacted, and errors.As still finds the original. It is used
// by pointer, so that printing a pool with %+v shows an address, not the
// DSN.
type redactingConnector struct {
	driver.Connector
	secrets dsnform.Secrets // of the DSN, and the passwords the driver's parser read
}

func (c *redactingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	return conn, c.secrets.Redact(err)
}
