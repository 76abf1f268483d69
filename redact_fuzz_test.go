package respool

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/respool/respool/internal/dsnform"
)

// fuzzSafe keeps the bytes of s that need no encoding anywhere in a DSN
// (letters, digits, '.', '-', '_'), at most 20, and never pwMark.
func fuzzSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < 20; i++ {
		if c := s[i]; dsnform.IsKeywordByte(c) {
			b.WriteByte(c)
		}
	}
	return fuzzNoMark(b.String())
}

// fuzzNoMark removes pwMark from s, in any case.
func fuzzNoMark(s string) string {
	for {
		i := markIndex(s)
		if i < 0 {
			return s
		}
		s = s[:i] + s[i+len(pwMark):]
	}
}

// fuzzNoPairAfter removes every '=' that follows the first byte of s in
// breaks. A password whose rest reads as a further key=value element or
// parameter (password=a b=c) is one that no parser can tell from one: such
// passwords are left out.
func fuzzNoPairAfter(s, breaks string) string {
	if i := strings.IndexAny(s, breaks); i >= 0 {
		return s[:i] + strings.ReplaceAll(s[i:], "=", "")
	}
	return s
}

// fuzzDSN builds a DSN of the form that form chooses, with the password
// pwMark+p1+pwMark+p2+pwMark written as variant chooses: encoded as its form
// wants, or raw (unencoded separators, unterminated quotes: the mistakes
// users make). The other parts come from user, host, db and app, stripped to
// bytes that need no encoding. form/3%3 (fuzzMalformed) makes another part
// of the DSN one that the real driver's parser refuses (issue 19 item 15):
// 1, a port (URL, keyword/value) or timeout (mysql) that is not a number; 2,
// an sslmode (pgx) or parseTime (mysql) that is not one; the host is then
// 127.0.0.1.
func fuzzDSN(form, variant uint8, user, p1, p2, host, db, app string) string {
	user, host, db, app = fuzzSafe(user), fuzzSafe(host), fuzzSafe(db), fuzzSafe(app)
	if host == "" {
		host = "h"
	}
	bad := fuzzMalformed(form)
	if bad != 0 {
		host = "127.0.0.1"
	}
	pw := pwMark + fuzzNoMark(p1) + pwMark + fuzzNoMark(p2) + pwMark
	raw := variant&1 != 0
	var params []string
	if variant&2 != 0 {
		params = append(params, "application_name="+app)
	}
	if variant&4 != 0 {
		params = append(params, "application_name=a@"+app) // an '@' in a query value
	}
	switch variant >> 3 & 3 {
	case 1:
		params = append(params, "respool_max_conns=2")
	case 2:
		params = append(params, "respool_max_conns=x"+app) // a *DSNError
	case 3:
		params = append(params, "respool_name="+app)
	}
	query := func(pairs ...string) string {
		if pairs = append(pairs, params...); len(pairs) == 0 {
			return ""
		}
		return "?" + strings.Join(pairs, "&")
	}
	port := ""
	if variant&32 != 0 {
		port = ":5432"
	}
	switch {
	case bad == 1 && form%3 == 2:
		params = append(params, "timeout=5x")
	case bad == 1:
		port = ":5432x"
	case bad == 2 && form%3 == 2:
		params = append(params, "parseTime=maybe")
	case bad == 2:
		params = append(params, "sslmode=maybe")
	}

	switch form % 3 {
	case 0: // URL
		scheme := "postgres://"
		if variant&64 != 0 {
			scheme = "postgresql://"
		}
		if variant&128 != 0 { // the password as a query parameter
			value := dsnform.EscapeQuery(pw)
			if raw {
				value = fuzzNoPairAfter(pw, "&")
			}
			return scheme + user + "@" + host + port + "/" + db + query("password="+value)
		}
		if !raw {
			pw = dsnform.EscapeQuery(pw)
		}
		return scheme + user + ":" + pw + "@" + host + port + "/" + db + query()
	case 1: // keyword/value
		key := "password"
		if variant&128 != 0 {
			key = "sslpassword"
		}
		value := dsnform.QuoteKV(pw)
		switch {
		case raw && variant&64 != 0: // quoted, nothing escaped
			value = "'" + fuzzNoPairAfter(pw, `'\`) + "'"
		case raw: // unquoted
			value = fuzzNoPairAfter(pw, dsnform.Spaces+`'\`)
		}
		dsn := "host=" + host + " user=" + user + " " + key + "=" + value + " dbname=" + db
		if port != "" {
			dsn += " port=" + port[1:]
		}
		for _, p := range params {
			dsn += " " + p
		}
		return dsn
	default: // mysql
		addr := "@tcp(" + host + ":3306)"
		if variant&64 != 0 {
			addr = "@unix(/tmp/" + host + ".sock)"
		}
		path := "/" + db
		if variant&128 != 0 {
			path = "" // malformed: no slash before the database name
		}
		return user + ":" + pw + addr + path + query()
	}
}

// fuzzMalformed tells what fuzzDSN makes malformed besides the password
// (0: nothing).
func fuzzMalformed(form uint8) uint8 { return form / 3 % 3 }

// FuzzRedaction builds DSNs of the three forms with a known password, well
// and badly written, and checks that no error, log line or description of
// respool shows any part of it that holds pwMark: RedactDSN, ParseDSN's
// error, every print and log of the Config, and the errors of NewConnector,
// Connect, Ping (sql.OpenDB and sql.Open) and Driver.Open, the pool's
// "create failed" log line and its Stats, all through fragmentDriver, whose
// errors show the DSN cut at every separator; or, for a DSN malformed
// elsewhere (fuzzMalformed), through the real driver, whose parser refuses
// it: its error printed every way, the Stats (JSON too), the health report
// and the log.
func FuzzRedaction(f *testing.F) {
	for form := range uint8(9) {
		for _, v := range []uint8{0, 1, 3, 5, 9, 17, 33, 65, 129, 131, 255} {
			f.Add(form, v, "u", "@ss", "/w", "db.example.com", "app", "x")
			f.Add(form, v, "admin", "?a=b@", "&c", "h", "db", "svc")
			f.Add(form, v, "", " ' ", `\`, "h", "", "")
			// Every byte some form treats specially (issue 19).
			f.Add(form, v, "app", `@/?:,#&=()[];`, `'"\% +!$*{}|^<>`+"`~\t", "h", "app", "")
			f.Add(form, v, "app", "r@t#", "/1", "h", "app", "")
		}
	}
	f.Fuzz(func(t *testing.T, form, variant uint8, user, p1, p2, host, db, app string) {
		dsn := fuzzDSN(form, variant, user, p1, p2, host, db, app)
		check := func(what, s string) {
			t.Helper()
			if hasMark(s) {
				t.Fatalf("%s shows the password of %q:\n%s", what, dsn, s)
			}
		}
		check("RedactDSN", RedactDSN(dsn))
		cfg, err := ParseDSN(dsn)
		if err != nil {
			for how, s := range errorOutputs(err) {
				check("ParseDSN error "+how, s)
			}
			return
		}
		for how, s := range configOutputs(cfg) {
			check(how, s)
		}
		if fuzzMalformed(form) != 0 {
			// The real driver refuses the DSN: its error, and what the
			// pool keeps of it, must not show the password either.
			out, _, err := connectorOutputs(t, *cfg, settleTimeout)
			if err != nil {
				for how, s := range errorOutputs(err) {
					check("NewConnector error "+how, s)
				}
				return
			}
			for how, s := range out {
				check(how, s)
			}
			return
		}

		cfg.DriverName = fragmentDriverName
		formatted := cfg.FormatDSN()
		logger, rec := newRecordingLogger()
		cfg.Pool.Logger = logger
		cfg.Pool.MinIdle = 1
		cfg.Pool.MaxObjects = 1
		c, err := NewConnector(*cfg)
		if err != nil {
			check("NewConnector error", err.Error())
			return
		}
		db1 := sql.OpenDB(c)
		defer db1.Close()
		_, err = c.Connect(context.Background())
		if !errors.Is(err, errFragment) {
			t.Fatalf("Connect: got %v, want the driver's error", err)
		}
		check("Connect error", err.Error())
		check("Ping error", fmt.Sprint(db1.PingContext(context.Background())))
		check("create failed log line", rec.waitLine(t, "create failed"))
		check("Stats", fmt.Sprintf("%+v", c.Stats()))

		db2, err := sql.Open(driverName, formatted)
		if err != nil {
			check("sql.Open error", err.Error())
			return
		}
		defer db2.Close()
		check("sql.Open Ping error", fmt.Sprint(db2.PingContext(context.Background())))
		_, err = sqlDriver{}.Open(formatted)
		check("Driver.Open error", fmt.Sprint(err))
	})
}
