package driver

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/respool/respool/internal/dsnform"
)

// dsnParam is one respool key found in a DSN.
type dsnParam struct {
	key     string // as written; percent-decoded in the URL and mysql forms
	value   string // decoded; raw when !valueOK
	valueOK bool   // false when the value could not be percent-decoded
}

// dsnHasKeyPrefix reports whether k is in respool's namespace. Case is
// ignored here, so that "RESPOOL_MAX_CONNS" is reported as a misspelling
// instead of reaching the server.
func dsnHasKeyPrefix(k string) bool {
	return dsnform.HasPrefixFold(k, dsnKeyPrefix)
}

// dsnSplit removes the respool keys from s, read in form f. It returns the
// rest of s and the keys in the order they appear.
func dsnSplit(s string, f dsnform.Form) (rest string, params []dsnParam, err error) {
	switch f {
	case dsnform.URL:
		q, err := dsnURLQuery(s)
		if err != nil {
			return "", nil, err
		}
		rest, params = dsnSplitQuery(s, q, url.PathUnescape)
		return rest, params, nil
	case dsnform.KV:
		return dsnSplitKV(s)
	default:
		rest, params = dsnSplitQuery(s, dsnform.MySQLQuery(s), url.QueryUnescape)
		return rest, params, nil
	}
}

// dsnSplitQuery removes the respool keys from the query of s that starts at
// the '?' at index q (no query when q < 0). The other parameters keep their
// bytes and order; an empty query loses its '?'.
func dsnSplitQuery(s string, q int, unescape func(string) (string, error)) (string, []dsnParam) {
	if q < 0 {
		return s, nil
	}
	var (
		kept   []string
		params []dsnParam
	)
	for _, seg := range strings.Split(s[q+1:], "&") {
		rawKey, rawValue, _ := strings.Cut(seg, "=")
		key, ours := dsnQueryKey(rawKey, unescape)
		if !ours {
			kept = append(kept, seg)
			continue
		}
		p := dsnParam{key: key, value: rawValue}
		if v, err := unescape(rawValue); err == nil {
			p.value, p.valueOK = v, true
		}
		params = append(params, p)
	}
	query := strings.Join(kept, "&")
	if query == "" {
		return s[:q], params
	}
	return s[:q+1] + query, params
}

// dsnQueryKey decodes the key of a query parameter and reports whether it is
// in respool's namespace, as written or decoded.
func dsnQueryKey(raw string, unescape func(string) (string, error)) (string, bool) {
	key := raw
	if d, err := unescape(raw); err == nil {
		key = strings.Trim(d, " ")
	}
	return key, dsnHasKeyPrefix(key) || dsnHasKeyPrefix(raw)
}

// dsnURLUserEnd returns the index of the '@' that ends the user information
// of a postgres URL, or -1: like libpq, the first '@' before any '/'.
func dsnURLUserEnd(s string) int {
	pl := dsnURLPrefixLen(s)
	if i := strings.IndexAny(s[pl:], "@/"); i >= 0 && s[pl+i] == '@' {
		return pl + i
	}
	return -1
}

func dsnURLPrefixLen(s string) int {
	if strings.HasPrefix(s, "postgresql://") {
		return len("postgresql://")
	}
	return len("postgres://")
}

// dsnURLQuery returns the index of the '?' that starts the query of the
// postgres URL s, or -1, reading hosts as pgx and libpq do: a comma-separated
// list of host[:port], where a host in brackets (IPv6) may hold any byte but
// ']'.
func dsnURLQuery(s string) (int, error) {
	i := dsnURLPrefixLen(s)
	if at := dsnURLUserEnd(s); at >= 0 {
		i = at + 1
	}
	q, _, err := dsnURLAfterUser(s, i)
	return q, err
}

// dsnURLAfterUser reads the postgres URL s from index i, where its hosts
// start (see dsnURLQuery). It returns the index of the '?' that starts the
// query, or -1, and whether the hosts and the path are plain: no host, port
// or path holds an '@', and every port is empty or a number.
func dsnURLAfterUser(s string, i int) (q int, plain bool, err error) {
	start, plain := i, true
	for {
		if i < len(s) && s[i] == '[' {
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return -1, false, fmt.Errorf(`%w: URL form: a host opens "[" and does not close it`, ErrInvalidDSN)
			}
			i += end + 1
			if i < len(s) && !strings.ContainsRune(":/?,", rune(s[i])) {
				return -1, false, fmt.Errorf(`%w: URL form: unexpected byte after "]" in a host (want ":", "/", "?", "," or the end)`, ErrInvalidDSN)
			}
		} else {
			i = dsnIndexFrom(s, i, ":/?,")
		}
		if i < len(s) && s[i] == ':' {
			port := i + 1
			i = dsnIndexFrom(s, port, "/?,")
			plain = plain && strings.Trim(s[port:i], "0123456789") == ""
		}
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		break
	}
	q = -1
	switch {
	case i < len(s) && s[i] == '/':
		if j := strings.IndexByte(s[i:], '?'); j >= 0 {
			q = i + j
		}
	case i < len(s) && s[i] == '?':
		q = i
	}
	end := len(s)
	if q >= 0 {
		end = q
	}
	return q, plain && strings.IndexByte(s[start:end], '@') < 0, nil
}

// dsnIndexFrom returns the index of the first byte of s[i:] in chars, or
// len(s).
func dsnIndexFrom(s string, i int, chars string) int {
	if j := strings.IndexAny(s[i:], chars); j >= 0 {
		return i + j
	}
	return len(s)
}

// dsnKVTokens is dsnform.KVTokens with its problem as an ErrInvalidDSN
// error naming the element by its position only.
func dsnKVTokens(s string) ([]dsnform.KVToken, int, error) {
	toks, bad, problem := dsnform.KVTokens(s)
	if problem != "" {
		return toks, bad, fmt.Errorf("%w: keyword/value form: element %d %s", ErrInvalidDSN, len(toks)+1, problem)
	}
	return toks, bad, nil
}

// dsnSplitKV removes the respool elements of a keyword/value DSN, each with
// one whitespace byte after it, except that the elements that end the DSN go
// with the whitespace before them instead.
func dsnSplitKV(s string) (string, []dsnParam, error) {
	toks, _, err := dsnKVTokens(s)
	if err != nil {
		return "", nil, err
	}
	var params []dsnParam
	tail := len(toks) // toks[tail:] are respool elements
	for i, t := range toks {
		if dsnHasKeyPrefix(t.Key) {
			params = append(params, dsnParam{key: t.Key, value: t.Value, valueOK: true})
			if tail == len(toks) {
				tail = i
			}
		} else {
			tail = len(toks)
		}
	}
	switch len(params) {
	case 0:
		return s, nil, nil
	case len(toks):
		return "", params, nil // nothing but respool's keys and whitespace
	}
	var b strings.Builder
	last := 0 // s[:last] is done
	for _, t := range toks[:tail] {
		if dsnHasKeyPrefix(t.Key) {
			b.WriteString(s[last:t.Start])
			last = t.End
			if last < len(s) && dsnform.IsSpace(s[last]) {
				last++
			}
		}
	}
	end := len(s)
	if tail < len(toks) {
		// Only separators go: not back into the previous value, whose
		// last byte may be an escaped space.
		end = toks[tail].Start
		for lo := max(last, toks[tail-1].End); end > lo && dsnform.IsSpace(s[end-1]); end-- {
		}
	}
	b.WriteString(s[last:end])
	return b.String(), params, nil
}

// ParseDSN reads a respool DSN: the underlying driver's DSN with respool's
// keys added, as in
//
//	postgres://app:pw@db:5432/app?sslmode=verify-full&respool_max_conns=20
//	host=db dbname=app user=app password='p w' respool_max_conns=20
//	app:pw@tcp(db:3306)/app?parseTime=true&respool_max_conns=20
//
