package chaos

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/respool/respool/internal/dsnform"
)

// param is one chaos key of a DSN.
type param struct {
	key, value string // decoded
	ok         bool   // false: the value could not be percent-decoded (value is raw)
}

func isChaosKey(k string) bool { return dsnform.HasPrefixFold(k, keyPrefix) }

// split removes the chaos keys from s, read in form f, and returns the rest
// and the keys in order. The rest keeps the other parameters' bytes and
// order; in the keyword/value form the kept elements are joined by one
// space.
func split(s string, f dsnform.Form) (string, []param, error) {
	switch f {
	case dsnform.URL:
		return splitQuery(s, urlQuery(s), url.PathUnescape)
	case dsnform.MySQL:
		return splitQuery(s, dsnform.MySQLQuery(s), url.QueryUnescape)
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

// splitKV splits a keyword/value DSN with libpq's rules (see
// dsnform.KVTokens). Errors name an element by its position only: its text
// may be a password.
func splitKV(s string) (string, []param, error) {
	toks, _, problem := dsnform.KVTokens(s)
	if problem != "" {
		if problem == dsnform.EmptyKeyword {
			problem = dsnform.NotKeyValue // chaos has said so of an empty keyword too
		}
		return "", nil, fmt.Errorf("%w: keyword/value form: element %d %s", ErrInvalidDSN, len(toks)+1, problem)
	}
	var kept []string
	var params []param
	for _, t := range toks {
		if isChaosKey(t.Key) {
			params = append(params, param{key: t.Key, value: t.Value, ok: true})
		} else {
			kept = append(kept, s[t.Start:t.End])
		}
	}
	if params == nil {
		return s, nil, nil
	}
	return strings.Join(kept, " "), params, nil
}
