package chaos

import (
	"net/url"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// minSecret is the length below which a password is not searched for in
// error messages: shorter would mangle ordinary words.
const minSecret = 3

// secretKeys are query parameters, lower case, whose values are passwords.
var secretKeys = []string{"password", "sslpassword", "passwd", "pwd", "pass"}

// secretsOf returns the passwords of dsn, longest first, as the wrapped
// driver reads them (pgx, go-sql-driver/mysql) or, for another driver, as
// any of them or net/url reads them (user information and password-like
// query parameters), each also percent-encoded.
func secretsOf(driverName, dsn string) []string {
	var passwords []string
	if fl := flavorOfName(driverName); fl != flavorMySQL {
		if cfg, err := pgconn.ParseConfig(dsn); err == nil {
			passwords = append(passwords, cfg.Password)
		}
	}
	if fl := flavorOfName(driverName); fl != flavorPostgres {
		if cfg, err := mysql.ParseDSN(dsn); err == nil {
			passwords = append(passwords, cfg.Passwd)
		}
	}
	if u, err := url.Parse(dsn); err == nil {
		if u.User != nil {
			p, _ := u.User.Password()
			passwords = append(passwords, p)
		}
		for k, vs := range u.Query() {
			if slices.Contains(secretKeys, strings.ToLower(k)) {
				passwords = append(passwords, vs...)
			}
		}
	}
	var out []string
	for _, p := range passwords {
		for _, s := range []string{p, url.QueryEscape(p), url.PathEscape(p)} {
			if len(s) >= minSecret && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
