package driver

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"github.com/respool/respool/internal/dsnform"
)

// dsnRedacted is what RedactDSN writes instead of a password.
const dsnRedacted = dsnform.Redacted

// RedactDSN returns dsn with its password replaced by "xxxxx", for logs and
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
//     path and query, the password is taken to run from the first ':' to the
//     last '@' of the DSN. A DSN with a password and an '@' in a query value
//     (application_name=a@b) therefore keeps only what follows that '@'.
//   - keyword/value: the values of password and sslpassword, as libpq reads
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
// A password-like query value runs to the next '&' that starts a key=value
// pair. A DSN without a password is returned unchanged. The redacted DSN is
// for reading, not for connecting.
func RedactDSN(dsn string) string {
	spans := dsnSecretSpans(dsn)
	if len(spans) == 0 {
		return dsn
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(dsn[last:sp.start])
		b.WriteString(dsnform.Redacted)
		last = sp.end
		if sp.apart && last < len(dsn) && !dsnform.IsSpace(dsn[last]) {
			// A quoted keyword/value value may touch the next element
			// ('x'y=1): keep them apart, as xxxxx is not quoted.
			b.WriteByte(' ')
		}
	}
	b.WriteString(dsn[last:])
	return b.String()
}

// dsnSpan is dsn[start:end], a part of a DSN that is, or may be, a password.
type dsnSpan struct {
	start, end int
	apart      bool // keyword/value: the text after the span is another element
}

// dsnSecretSpans returns the parts of dsn that RedactDSN replaces, in order
// and not overlapping.
func dsnSecretSpans(dsn string) []dsnSpan {
	switch dsnform.Of(dsn) {
	case dsnform.URL:
		return dsnURLSecrets(dsn)
	case dsnform.KV:
		return dsnKVSecrets(dsn)
	default:
		return dsnMySQLSecrets(dsn)
	}
}

// dsnSecretKeys are parameter keys, lower case, whose values RedactDSN
// replaces.
var dsnSecretKeys = []string{"password", "sslpassword", "passwd", "pwd", "pass", "_auth_pass"}

func dsnIsSecretKey(key string) bool {
	return slices.Contains(dsnSecretKeys, strings.ToLower(key))
}

// dsnURLSecrets reads s as libpq does and, when an '@' follows the user
// information and the reading is in doubt, also with the user information
// ending at the last '@' (see RedactDSN); it returns the union.
func dsnURLSecrets(s string) []dsnSpan {
	pl := dsnURLPrefixLen(s)
	at := dsnURLUserEnd(s)
	spans := dsnURLReading(s, pl, at)
	if last := strings.LastIndexByte(s, '@'); last > at && last >= pl {
		q, plain, err := dsnURLAfterUser(s, max(pl, at+1))
		withPassword := at >= 0 && strings.IndexByte(s[pl:at], ':') >= 0
		if withPassword || !plain || err != nil || !dsnQueryWellFormed(s, q) {
			spans = dsnMergeSpans(append(spans, dsnURLReading(s, pl, last)...))
		}
	}
	return spans
}

// dsnURLReading returns the secrets of the postgres URL s whose user
// information ends at the '@' at index at (none when at < 0).
func dsnURLReading(s string, pl, at int) []dsnSpan {
	from := max(pl, at+1)
	q, _, err := dsnURLAfterUser(s, from)
	if err != nil {
		// The hosts cannot be read, and so neither can the query as pgx
		// would: take the first '?' after the user information.
		q = dsnIndexAfter(s, from, '?')
	}
	return dsnQuerySecrets(dsnUserinfoSecret(nil, s, pl, at), s, q, url.PathUnescape)
}

// dsnMySQLSecrets reads s as go-sql-driver/mysql does (or, for a
// scheme://user:password@host DSN, as net/url does) and, when an '@'
// follows the user information and the reading is in doubt, also with the
// user information ending at the last '@'; it returns the union.
func dsnMySQLSecrets(s string) []dsnSpan {
	q := dsnform.MySQLQuery(s)
	head := s
	if q >= 0 {
		head = s[:q]
	}
	from, at := 0, -1
	if se := dsnSchemeEnd(head); se >= 0 {
		from = se + len("://")
		auth := head[from:]
		if i := strings.IndexAny(auth, "/?#"); i >= 0 {
			auth = auth[:i]
		}
		if i := strings.LastIndexByte(auth, '@'); i >= 0 {
			at = from + i
		}
	} else {
		region := head
		if slash := strings.LastIndexByte(head, '/'); slash >= 0 {
			region = head[:slash]
		}
		at = strings.LastIndexByte(region, '@')
	}
	spans := dsnQuerySecrets(dsnUserinfoSecret(nil, s, from, at), s, q, url.QueryUnescape)
	if last := strings.LastIndexByte(s, '@'); last > at {
		// A ':' before the '@' may start a password: in the user
		// information, or, when there is none, wherever it is (the DSN
		// cannot be read as mysql reads it).
		userEnd := at
		if at < 0 {
			userEnd = last
		}
		colon := strings.IndexByte(s[from:userEnd], ':') >= 0
		plain := strings.IndexByte(head[at+1:], '@') < 0 // the '@'s are in the query
		if colon || !plain || !dsnQueryWellFormed(s, q) {
			if q = dsnform.MySQLQuery(s[last+1:]); q >= 0 {
				q += last + 1
			}
			spans = dsnQuerySecrets(dsnUserinfoSecret(spans, s, from, last), s, q, url.QueryUnescape)
			spans = dsnMergeSpans(spans)
		}
	}
	return spans
}

// dsnMergeSpans sorts spans and merges those that overlap or touch.
func dsnMergeSpans(spans []dsnSpan) []dsnSpan {
	slices.SortFunc(spans, func(a, b dsnSpan) int { return cmp.Compare(a.start, b.start) })
	out := spans[:0]
	for _, sp := range spans {
		if n := len(out); n > 0 && sp.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// dsnQueryWellFormed reports whether every '&'-separated pair of the query
// of s that starts at the '?' at index q has exactly one '='. No query (q < 0)
// and an empty one are well formed.
func dsnQueryWellFormed(s string, q int) bool {
	if q < 0 || q == len(s)-1 {
		return true
	}
	for pair := range strings.SplitSeq(s[q+1:], "&") {
		if strings.Count(pair, "=") != 1 {
			return false
		}
	}
	return true
}

// dsnIndexAfter returns the index of the first c in s[i:], or -1.
func dsnIndexAfter(s string, i int, c byte) int {
	if j := strings.IndexByte(s[i:], c); j >= 0 {
		return i + j
	}
	return -1
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

// dsnUserinfoSecret appends to spans the password of the user information
// s[from:at] (user:password, at indexing the '@'), if it has one.
func dsnUserinfoSecret(spans []dsnSpan, s string, from, at int) []dsnSpan {
	if at < 0 {
		return spans
	}
	colon := strings.IndexByte(s[from:at], ':')
	if colon < 0 || from+colon+1 == at {
		return spans
	}
	return append(spans, dsnSpan{start: from + colon + 1, end: at})
}

// dsnQuerySecrets appends to spans the values of the password-like
// parameters of the query that starts at the '?' at index q (none when
// q < 0). A value runs over the pairs without '=' that follow it: they are
// no parameters, and may be the rest of a password holding an '&'.
func dsnQuerySecrets(spans []dsnSpan, s string, q int, unescape func(string) (string, error)) []dsnSpan {
	if q < 0 {
		return spans
	}
	open := false // the last span is a value that pairs without '=' extend
	for i := q + 1; i <= len(s); {
		end := i + strings.IndexByte(s[i:]+"&", '&')
		rawKey, _, isPair := strings.Cut(s[i:end], "=")
		switch {
		case !isPair && open:
			spans[len(spans)-1].end = end
		case isPair:
			key := rawKey
			if d, err := unescape(rawKey); err == nil {
				key = strings.Trim(d, " ")
			}
			open = dsnIsSecretKey(key)
			if open {
				spans = append(spans, dsnSpan{start: i + len(rawKey) + 1, end: end})
			}
		}
		i = end + 1
	}
	// An empty value with nothing after it hides nothing.
	return slices.DeleteFunc(spans, func(sp dsnSpan) bool { return sp.start == sp.end })
}

func dsnKVSecrets(s string) []dsnSpan {
	toks, bad, problem := dsnform.KVTokens(s)
	var spans []dsnSpan
	for _, t := range toks {
		switch {
		case dsnIsSecretKey(t.Key) && t.ValStart < t.End:
			spans = append(spans, dsnSpan{start: t.ValStart, end: t.End, apart: true})
		default:
			// "user= password=x": libpq reads "password=x" as the user,
			// and shows it as the user; a simpler parser reads a password.
			// Such a password may be quoted ("user= password='a b'"): it
			// then runs to its closing quote, or to the end of libpq's
			// value if that is further.
			raw := s[t.ValStart:t.End]
			if k, _, ok := strings.Cut(raw, "="); ok && dsnIsSecretKey(k) && len(k)+1 < len(raw) {
				start, end := t.ValStart+len(k)+1, t.End
				if s[start] == '\'' {
					if q := dsnform.QuoteEnd(s, start); q < 0 {
						end = len(s)
					} else {
						end = max(end, q)
					}
				}
				spans = append(spans, dsnSpan{start: start, end: end, apart: true})
			}
		}
	}
	if problem != "" {
		spans = append(spans, dsnSpan{start: bad, end: len(s)})
	}
	return dsnMergeSpans(spans)
}

// dsnMinSecret is the length below which a secret is not searched for in
// error messages: shorter would mangle ordinary words.
const dsnMinSecret = 3

// dsnSecretSeparators are the bytes at which some parser may cut a password
// that holds them, showing the pieces as a host, port, database, user or
// parameter.
const dsnSecretSeparators = "@/?:,#&=()[];'\"\\" + dsnform.Spaces

// secretsOf returns, longest first, the texts an error might show of dsn's
// passwords (the spans RedactDSN replaces): each as written, decoded
// (percent-decoding, libpq's quotes and backslashes), and cut into pieces at
// dsnSecretSeparators, leaving out those shorter than dsnMinSecret.
func secretsOf(dsn string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= dsnMinSecret && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, sp := range dsnSecretSpans(dsn) {
		raw := dsn[sp.start:sp.end]
		spellings := []string{raw, dsnUnquoteKV(raw)}
		for _, unescape := range []func(string) (string, error){url.PathUnescape, url.QueryUnescape} {
			if dec, err := unescape(raw); err == nil {
				spellings = append(spellings, dec)
			}
		}
		for _, s := range spellings {
			add(s)
			for _, piece := range strings.FieldsFunc(s, func(r rune) bool {
				return r < 0x80 && strings.IndexByte(dsnSecretSeparators, byte(r)) >= 0
			}) {
				add(piece)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// dsnUnquoteKV returns a keyword/value value as libpq reads it: without its
// single quotes, backslash escapes applied.
func dsnUnquoteKV(raw string) string {
	if len(raw) >= 2 && raw[0] == '\'' && raw[len(raw)-1] == '\'' {
		raw = raw[1 : len(raw)-1]
	}
	return dsnform.UnescapeKV(raw)
}
