package driver

import (
	"net/url"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// dsnRedacted is what RedactDSN writes instead of a password.
const dsnRedacted = "xxxxx"

// RedactDSN returns dsn with its password replaced by "xxxxx", for logs and
// errors. It reads dsn as ParseDSN does:
//
//   - URL: the password of the user information (user:password@), and the
//     values of password-like query parameters. When libpq's rule finds no
//     user information (a password with an unescaped '/'), the text before
//     the last '@' ahead of the query is taken as user information.
//   - keyword/value: the values of password and sslpassword. Everything from
//     a malformed element (an unterminated quote) on is replaced.
//   - mysql: the password of user:password@ (before the last '@' that is
//     before the last '/'), or of a scheme://user:password@host DSN of
//     another driver, and the values of password-like query parameters.
//
// A DSN without a password is returned unchanged. The redacted DSN is for
// reading, not for connecting.
func RedactDSN(dsn string) string {
	switch dsnFormOf(dsn) {
	case dsnFormURL:
		return dsnRedactURL(dsn)
	case dsnFormKV:
		return dsnRedactKV(dsn)
	default:
		return dsnRedactMySQL(dsn)
	}
}

// dsnSecretKeys are parameter keys, lower case, whose values RedactDSN
// replaces.
var dsnSecretKeys = []string{"password", "sslpassword", "passwd", "pwd", "pass", "_auth_pass"}

func dsnIsSecretKey(key string) bool {
	return slices.Contains(dsnSecretKeys, strings.ToLower(key))
}

func dsnRedactURL(s string) string {
	pl := dsnURLPrefixLen(s)
	q, err := dsnURLQuery(s)
	at := dsnURLUserEnd(s)
	if err != nil {
		// The hosts cannot be read, and so neither can the query as pgx
		// would: take the first '?' after the user information.
		q = -1
		from := max(pl, at+1)
		if i := strings.IndexByte(s[from:], '?'); i >= 0 {
			q = from + i
		}
	}
	head, tail := s, ""
	if q >= 0 {
		head, tail = s[:q], s[q:]
	}
	if at < 0 {
		if i := strings.LastIndexByte(head[pl:], '@'); i >= 0 {
			at = pl + i
		}
	}
	if at >= 0 {
		head = dsnRedactUserinfo(head, pl, at)
	}
	return head + dsnRedactQuery(tail, url.PathUnescape)
}

func dsnRedactMySQL(s string) string {
	head, tail := s, ""
	if q := dsnMySQLQuery(s); q >= 0 {
		head, tail = s[:q], s[q:]
	}
	if se := dsnSchemeEnd(head); se >= 0 {
		from := se + len("://")
		auth := head[from:]
		if i := strings.IndexAny(auth, "/?#"); i >= 0 {
			auth = auth[:i]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			head = dsnRedactUserinfo(head, from, from+at)
		}
	} else {
		region := head
		if slash := strings.LastIndexByte(head, '/'); slash >= 0 {
			region = head[:slash]
		}
		if at := strings.LastIndexByte(region, '@'); at >= 0 {
			head = dsnRedactUserinfo(head, 0, at)
		}
	}
	return head + dsnRedactQuery(tail, url.QueryUnescape)
}

// dsnSchemeEnd returns the index of the ':' of a leading "scheme://", or -1.
func dsnSchemeEnd(s string) int {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z':
		case i > 0 && ('0' <= ch && ch <= '9' || ch == '+' || ch == '-' || ch == '.'):
		case i > 0 && ch == ':' && strings.HasPrefix(s[i:], "://"):
			return i
		default:
			return -1
		}
	}
	return -1
}

// dsnRedactUserinfo replaces the password in the user information s[from:at]
// (user:password, at indexing the '@').
func dsnRedactUserinfo(s string, from, at int) string {
	colon := strings.IndexByte(s[from:at], ':')
	if colon < 0 || from+colon+1 == at {
		return s
	}
	return s[:from+colon+1] + dsnRedacted + s[at:]
}

// dsnRedactQuery replaces the values of password-like parameters in tail, a
// query with its leading '?' (or "").
func dsnRedactQuery(tail string, unescape func(string) (string, error)) string {
	if tail == "" {
		return tail
	}
	segs := strings.Split(tail[1:], "&")
	changed := false
	for i, seg := range segs {
		rawKey, value, ok := strings.Cut(seg, "=")
		if !ok || value == "" {
			continue
		}
		key := rawKey
		if d, err := unescape(rawKey); err == nil {
			key = strings.Trim(d, " ")
		}
		if dsnIsSecretKey(key) {
			segs[i] = rawKey + "=" + dsnRedacted
			changed = true
		}
	}
	if !changed {
		return tail
	}
	return tail[:1] + strings.Join(segs, "&")
}

func dsnRedactKV(s string) string {
	toks, bad, err := dsnKVTokens(s)
	var b strings.Builder
	last := 0
	for _, t := range toks {
		if dsnIsSecretKey(t.key) && t.valStart < t.end {
			b.WriteString(s[last:t.valStart])
			b.WriteString(dsnRedacted)
			last = t.end
			if last < len(s) && !dsnIsSpace(s[last]) {
				// A quoted value may touch the next element ('x'y=1):
				// keep them apart, as xxxxx is not quoted.
				b.WriteByte(' ')
			}
		}
	}
	if err == nil {
		b.WriteString(s[last:])
		return b.String()
	}
	b.WriteString(s[last:bad])
	b.WriteString(dsnRedacted)
	return b.String()
}

// redactError returns err with every spelling of dsn's password (as
// written, decoded) replaced by "xxxxx". An error that shows none is returned
// as it is; otherwise the original stays reachable through Unwrap, so
// errors.Is and errors.As keep working.
func redactError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	redacted := msg
	for _, secret := range secretsOf(dsn) {
		if len(secret) >= 3 { // shorter would mangle ordinary words
			redacted = strings.ReplaceAll(redacted, secret, dsnRedacted)
		}
	}
	if redacted == msg {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// secretsOf returns the passwords in dsn, each as written and decoded, read
// with the parser of its form: net/url (user information and password-like
// query parameters), libpq's keyword/value rules, or go-sql-driver/mysql's
// ParseDSN.
func secretsOf(dsn string) []string {
	var out []string
	add := func(raw string, decode func(string) (string, error)) {
		out = append(out, raw)
		if dec, err := decode(raw); err == nil && dec != raw {
			out = append(out, dec)
		}
	}
	switch dsnFormOf(dsn) {
	case dsnFormURL:
		u, err := url.Parse(dsn)
		if err != nil {
			break
		}
		if u.User != nil {
			if _, raw, ok := strings.Cut(u.User.String(), ":"); ok {
				add(raw, url.PathUnescape)
			}
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw)
			}
		}
		for _, kv := range strings.Split(u.RawQuery, "&") {
			if k, v, ok := strings.Cut(kv, "="); ok && dsnIsSecretKey(k) {
				add(v, url.QueryUnescape)
			}
		}
	case dsnFormKV:
		toks, _, _ := dsnKVTokens(dsn)
		for _, t := range toks {
			if dsnIsSecretKey(t.key) {
				out = append(out, t.value, dsn[t.valStart:t.end])
			}
		}
	case dsnFormMySQL:
		if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
			out = append(out, cfg.Passwd)
		}
	}
	return out
}
