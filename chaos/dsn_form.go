package chaos

import (
	"fmt"
	"net/url"
	"strings"
)

// form is the syntax of a DSN, told apart as respool's driver tells it (see
// ParseDSN).
type form uint8

const (
	formURL   form = iota + 1 // postgres:// or postgresql:// URL (pgx)
	formKV                    // libpq keyword/value (pgx)
	formMySQL                 // go-sql-driver/mysql, or any DSN with a ?query
)

// spaces are the bytes libpq and pgx take as whitespace.
const spaces = " \t\n\v\f\r"

func isSpace(b byte) bool { return strings.IndexByte(spaces, b) >= 0 }

func skipSpaces(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func formOf(s string) form {
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		return formURL
	}
	i := skipSpaces(s, 0)
	if i == len(s) {
		return formKV
	}
	j := i
	for j < len(s) && isKeywordByte(s[j]) {
		j++
	}
	if j > i {
		if j = skipSpaces(s, j); j < len(s) && s[j] == '=' {
			return formKV
		}
	}
	return formMySQL
}

func isKeywordByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '.' || b == '-'
}

func (f form) driver() string {
	if f == formMySQL {
		return "mysql"
	}
	return "pgx"
}

// param is one chaos key of a DSN.
type param struct {
	key, value string // decoded
	ok         bool   // false: the value could not be percent-decoded (value is raw)
}

func isChaosKey(k string) bool {
	return len(k) >= len(keyPrefix) && strings.EqualFold(k[:len(keyPrefix)], keyPrefix)
}

// split removes the chaos keys from s, read in form f, and returns the rest
// and the keys in order. The rest keeps the other parameters' bytes and
// order; in the keyword/value form the kept elements are joined by one
// space.
func split(s string, f form) (string, []param, error) {
	switch f {
	case formURL:
		return splitQuery(s, urlQuery(s), url.PathUnescape)
	case formMySQL:
		return splitQuery(s, mysqlQuery(s), url.QueryUnescape)
	}
	return splitKV(s)
}

// urlQuery returns the index of the '?' that starts the query of a postgres
// URL, or -1: the first '?' after the user information, which ends, as
// libpq reads it, at the first '@' before any '/'.
func urlQuery(s string) int {
	i := strings.Index(s, "://") + len("://")
	if j := strings.IndexAny(s[i:], "@/"); j >= 0 && s[i+j] == '@' {
		i += j + 1
	}
	if j := strings.IndexByte(s[i:], '?'); j >= 0 {
		return i + j
	}
	return -1
}

// mysqlQuery returns the index of the '?' that starts the query of a
// mysql-form DSN, or -1: the first '?' after the last '/', or the first '?'
// when there is no '/'.
func mysqlQuery(s string) int {
	if slash := strings.LastIndexByte(s, '/'); slash >= 0 {
		if q := strings.IndexByte(s[slash+1:], '?'); q >= 0 {
			return slash + 1 + q
		}
		return -1
	}
	return strings.IndexByte(s, '?')
}

func splitQuery(s string, q int, unescape func(string) (string, error)) (string, []param, error) {
	if q < 0 {
		return s, nil, nil
	}
	var kept []string
	var params []param
	for seg := range strings.SplitSeq(s[q+1:], "&") {
		rawKey, rawValue, _ := strings.Cut(seg, "=")
		key := rawKey
		if d, err := unescape(rawKey); err == nil {
			key = strings.TrimSpace(d)
		}
		if !isChaosKey(key) && !isChaosKey(rawKey) {
			kept = append(kept, seg)
			continue
		}
		p := param{key: key, value: rawValue}
		if v, err := unescape(rawValue); err == nil {
			p.value, p.ok = v, true
		}
		params = append(params, p)
	}
	if params == nil {
		return s, nil, nil
	}
	if len(kept) == 0 {
		return s[:q], params, nil
	}
	return s[:q+1] + strings.Join(kept, "&"), params, nil
}

// splitKV splits a keyword/value DSN with libpq's rules: a value is a run of
// non-space bytes or single-quoted, and a backslash makes the next byte
// literal. Errors name an element by its position only: its text may be a
// password.
func splitKV(s string) (string, []param, error) {
	var kept []string
	var params []param
	n := 0 // elements read
	for i := skipSpaces(s, 0); i < len(s); i = skipSpaces(s, i) {
		n++
		start := i
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return "", nil, fmt.Errorf("%w: keyword/value form: element %d is not keyword=value", ErrInvalidDSN, n)
		}
		key := strings.TrimRight(s[i:i+eq], spaces)
		if key == "" || strings.ContainsAny(key, spaces) {
			return "", nil, fmt.Errorf("%w: keyword/value form: element %d is not keyword=value", ErrInvalidDSN, n)
		}
		var value strings.Builder
		j := skipSpaces(s, i+eq+1)
		quoted := j < len(s) && s[j] == '\''
		if quoted {
			j++
		}
		for ; j < len(s); j++ {
			c := s[j]
			if quoted && c == '\'' || !quoted && isSpace(c) {
				break
			}
			if c == '\\' {
				if j++; j == len(s) {
					break
				}
				c = s[j]
			}
			value.WriteByte(c)
		}
		if quoted {
			if j >= len(s) {
				return "", nil, fmt.Errorf("%w: keyword/value form: element %d has an unterminated quoted value", ErrInvalidDSN, n)
			}
			j++ // the closing quote
		}
		i = j
		if isChaosKey(key) {
			params = append(params, param{key: key, value: value.String(), ok: true})
		} else {
			kept = append(kept, s[start:j])
		}
	}
	if params == nil {
		return s, nil, nil
	}
	return strings.Join(kept, " "), params, nil
}
