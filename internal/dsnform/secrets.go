package dsnform

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// What a secret is: the password of a DSN's user information
// (user:password@), and the value of a parameter whose key is one of
// SecretKeys, in any case, in each form. A password may hold separators
// that its writer forgot to encode (postgres://u:p@ss/w?rd@host/db), and
// drivers disagree on where such a password ends (libpq and pgx: at the
// first '@' before any '/'; net/url: at the last '@' before the path;
// go-sql-driver/mysql: at the last '@' before the last '/'), so the
// secrets are the widest reading:
//
//   - URL: the password of the user information, and the values of the
//     secret keys of the query. When an '@' follows the user information as
//     libpq reads it, and that user information holds a password or the
//     rest does not read as plain hosts, numeric ports, path and a query of
//     key=value pairs whose keys are letters, digits, '_', '.' and '-', the
//     password is taken to run from the first ':' to the last '@' of the
//     DSN too.
//   - keyword/value: the values of the secret keys, as libpq reads them,
//     and the password of a value that reads "password=..." (libpq reads
//     "user= password=x" as the user "password=x"). Everything from a
//     malformed element (an unterminated quote) on.
//   - mysql: the password of user:password@ (before the last '@' that is
//     before the last '/'), or of a scheme://user:password@host DSN of
//     another driver, and the values of the secret keys of the query. When
//     an '@' follows, and a ':' precedes it or the '@'s are not all in a
//     well-formed query, the widest reading as for a URL.
//
// A secret value runs over the elements after it that no driver reads as
// parameters: an element without '=', or one whose key is not a parameter
// of libpq, pgx, go-sql-driver/mysql, SQLite's drivers or respool
// (KnownKey): "password=a&Pw=1" has the password "a&Pw=1".

// SecretKeys are the parameter keys, lower case, whose values are secrets.
var SecretKeys = []string{"password", "sslpassword", "passwd", "pwd", "pass", "_auth_pass", "oauth_client_secret"}

// IsSecretKey reports whether key is one of SecretKeys, in any case.
func IsSecretKey(key string) bool {
	return slices.ContainsFunc(SecretKeys, func(k string) bool { return strings.EqualFold(k, key) })
}

// knownKeys are the parameters of libpq, pgx, go-sql-driver/mysql and
// SQLite's drivers, and run-time parameters often set in a DSN, lower case.
var knownKeys = strings.Fields(`
	host hostaddr port dbname database user password passfile require_auth channel_binding connect_timeout
	client_encoding options application_name fallback_application_name keepalives keepalives_idle
	keepalives_interval keepalives_count tcp_user_timeout replication gssencmode sslmode sslnegotiation
	sslcompression sslcert sslkey sslkeylogfile sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni
	requirepeer ssl_min_protocol_version ssl_max_protocol_version min_protocol_version max_protocol_version
	krbsrvname krbspn gsslib gssdelegation service servicefile target_session_attrs load_balance_hosts
	oauth_issuer oauth_client_id oauth_client_secret oauth_scope ssl statement_cache_capacity
	description_cache_capacity default_query_exec_mode search_path timezone datestyle intervalstyle
	statement_timeout lock_timeout idle_in_transaction_session_timeout extra_float_digits
	standard_conforming_strings default_transaction_isolation default_transaction_read_only
	pool_max_conns pool_min_conns pool_min_idle_conns pool_max_conn_lifetime pool_max_conn_lifetime_jitter
	pool_max_conn_idle_time pool_health_check_period pool_ping_timeout
	allowallfiles allowcleartextpasswords allowfallbacktoplaintext allownativepasswords allowoldpasswords
	charset checkconnliveness clientfoundrows collation columnswithalias compress connectionattributes
	interpolateparams loc timetruncate maxallowedpacket multistatements parsetime readtimeout
	rejectreadonly serverpubkey timeout tls writetimeout autocommit sql_mode time_zone
	transaction_isolation tx_isolation passwd pwd pass _auth_pass
	mode cache immutable vfs nolock psow _auth _auth_user _auth_crypt _auth_salt _auto_vacuum _vacuum
	_busy_timeout _timeout _case_sensitive_like _cslike _defer_foreign_keys _defer_fk _foreign_keys _fk
	_ignore_check_constraints _journal_mode _journal _locking_mode _locking _loc _mutex _query_only
	_recursive_triggers _rt _secure_delete _synchronous _sync _txlock _cache_size _pragma _time_format`)

// KnownKey reports whether key is a parameter a driver or respool reads:
// one of libpq's, pgx's, go-sql-driver/mysql's or SQLite's drivers', a
// run-time parameter often set in a DSN, or a key of respool's or chaos's
// namespace; any case.
func KnownKey(key string) bool {
	k := strings.ToLower(key)
	return slices.Contains(knownKeys, k) || strings.HasPrefix(k, "respool_") || strings.HasPrefix(k, "chaos_")
}

// span is s[start:end], a part of a DSN that is, or may be, a password.
type span struct {
	start, end int
	apart      bool // keyword/value: the text after the span is another element
}

// Redact returns dsn with each of its secrets replaced by Redacted (see
// above); a DSN without a password is returned unchanged. The redacted DSN
// is for reading, not for connecting.
func Redact(dsn string) string {
	spans := tokenize(dsn).spans()
	if len(spans) == 0 {
		return dsn
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(dsn[last:sp.start])
		b.WriteString(Redacted)
		last = sp.end
		if sp.apart && last < len(dsn) && !IsSpace(dsn[last]) {
			// A quoted keyword/value value may touch the next element
			// ('x'y=1): keep them apart, as xxxxx is not quoted.
			b.WriteByte(' ')
		}
	}
	b.WriteString(dsn[last:])
	return b.String()
}

// spans returns the secrets of the DSN, in order and not overlapping.
func (t *tokens) spans() []span {
	switch t.form {
	case URL:
		return t.urlSpans()
	case KV:
		return t.kvSpans()
	default:
		return t.mysqlSpans()
	}
}

// urlSpans reads the URL as libpq does and, when an '@' follows the user
// information and the reading is in doubt, also with the user information
// ending at the last '@'; it returns the union.
func (t *tokens) urlSpans() []span {
	s := t.s
	spans := t.querySpans(userinfoSpan(nil, s, t.userFrom, t.userEnd))
	last := strings.LastIndexByte(s, '@')
	if last <= t.userEnd || last < t.userFrom {
		return spans
	}
	withPassword := t.userEnd >= 0 && strings.IndexByte(s[t.userFrom:t.userEnd], ':') >= 0
	if withPassword || t.hosts.at || t.hosts.badPort || t.hostsErr != nil || !t.plainQuery() {
		wide := &tokens{s: s, form: URL, userFrom: t.userFrom, userEnd: last}
		wide.hosts, wide.hostsErr = urlReadHosts(s, last+1)
		wide.query = wide.hosts.query
		if wide.hostsErr != nil {
			wide.query = indexAfter(s, last+1, '?')
		}
		wide.elems = queryElements(s, wide.query, url.PathUnescape)
		spans = mergeSpans(append(spans, wide.querySpans(userinfoSpan(nil, s, t.userFrom, last))...))
	}
	return spans
}

// plainQuery reports whether every element of the query is key=value with
// one '=' and a key of letters, digits, '_', '.' and '-'. No query and an
// empty one are plain.
func (t *tokens) plainQuery() bool {
	if t.query < 0 || t.query == len(t.s)-1 {
		return true
	}
	for _, e := range t.elems {
		if e.eqs != 1 || !IsKeyword(e.key) {
			return false
		}
	}
	return true
}

// mysqlSpans reads the DSN as go-sql-driver/mysql does (or, for a
// scheme://user:password@host DSN, as net/url does) and, when an '@'
// follows the user information and the reading is in doubt, also with the
// user information ending at the last '@'; it returns the union.
func (t *tokens) mysqlSpans() []span {
	s := t.s
	spans := t.querySpans(userinfoSpan(nil, s, t.userFrom, t.userEnd))
	last := strings.LastIndexByte(s, '@')
	if last <= t.userEnd {
		return spans
	}
	head := s
	if t.query >= 0 {
		head = s[:t.query]
	}
	// A ':' before the '@' may start a password: in the user information,
	// or, when there is none, wherever it is (the DSN cannot be read as
	// mysql reads it).
	userEnd := t.userEnd
	if userEnd < 0 {
		userEnd = last
	}
	colon := strings.IndexByte(s[t.userFrom:userEnd], ':') >= 0
	plain := strings.IndexByte(head[t.userEnd+1:], '@') < 0 // the '@'s are in the query
	if colon || !plain || !t.plainQuery() {
		wide := &tokens{s: s, form: MySQL, query: MySQLQuery(s[last+1:])}
		if wide.query >= 0 {
			wide.query += last + 1
		}
		wide.elems = queryElements(s, wide.query, url.QueryUnescape)
		spans = mergeSpans(wide.querySpans(userinfoSpan(spans, s, t.userFrom, last)))
	}
	return spans
}

// userinfoSpan appends to spans the password of the user information
// s[from:at] (user:password, at indexing the '@'), if it has one.
func userinfoSpan(spans []span, s string, from, at int) []span {
	if at < 0 {
		return spans
	}
	colon := strings.IndexByte(s[from:at], ':')
	if colon < 0 || from+colon+1 == at {
		return spans
	}
	return append(spans, span{start: from + colon + 1, end: at})
}

// querySpans appends to spans the values of the secret keys of the query:
// each runs over the elements after it that no driver reads as parameters
// (see above).
func (t *tokens) querySpans(spans []span) []span {
	open := false // the last span is a value that may run on
	for _, e := range t.elems {
		switch {
		case e.valStart >= 0 && IsSecretKey(e.key):
			spans = append(spans, span{start: e.valStart, end: e.end})
			open = true
		case open && (e.valStart < 0 || !KnownKey(e.key)):
			spans[len(spans)-1].end = e.end
		default:
			open = false
		}
	}
	// An empty value with nothing after it hides nothing.
	return slices.DeleteFunc(spans, func(sp span) bool { return sp.start == sp.end })
}

// kvSpans returns the secrets of a keyword/value DSN.
func (t *tokens) kvSpans() []span {
	s := t.s
	var spans []span
	open := false // the last span is a value that may run on
	for _, e := range t.elems {
		switch {
		case IsSecretKey(e.key) && e.valStart < e.end:
			spans = append(spans, span{start: e.valStart, end: e.end, apart: true})
			open = true
			continue
		case open && !KnownKey(e.key):
			spans[len(spans)-1].end = e.end
			continue
		}
		open = false
		// "user= password=x": libpq reads "password=x" as the user, and
		// shows it as the user; a simpler parser reads a password. Such a
		// password may be quoted ("user= password='a b'"): it then runs to
		// its closing quote, or to the end of libpq's value if that is
		// further.
		raw := s[e.valStart:e.end]
		if k, _, ok := strings.Cut(raw, "="); ok && IsSecretKey(k) && len(k)+1 < len(raw) {
			start, end := e.valStart+len(k)+1, e.end
			if s[start] == '\'' {
				if q := QuoteEnd(s, start); q < 0 {
					end = len(s)
				} else {
					end = max(end, q)
				}
			}
			spans = append(spans, span{start: start, end: end, apart: true})
		}
	}
	if t.problem != "" {
		spans = append(spans, span{start: t.bad, end: len(s)})
	}
	return mergeSpans(spans)
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	out := spans[:0]
	for _, sp := range spans {
		if n := len(out); n > 0 && sp.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, sp.end)
			out[n-1].apart = out[n-1].apart || sp.apart
			continue
		}
		out = append(out, sp)
	}
	return out
}

// MinSecret is the length below which a piece of a password is not
// searched for in error messages: shorter would mangle ordinary words.
const MinSecret = 3

// maxCutsAcross bounds how many separators a piece of a password
// (Secrets) may hold: a password of many separators would give too many.
const maxCutsAcross = 24

// Secrets are the texts an error may show of a DSN's passwords, longest
// first: each password as written, decoded (percent-decoding, libpq's
// quotes and backslashes) and encoded (percent-encoding, Go quoting), and
// every piece of each spelling between two of its separators (any ASCII
// byte but a letter, a digit, '-', '.', '_', '~' and '%': a parser may cut
// a password at some and show what lies between, "t#Pw" of "S3cr@t#Pw/1"
// as a host), of MinSecret bytes or more.
type Secrets []string

// secrets returns the Secrets of the DSN's spans.
func (t *tokens) secrets() Secrets {
	var raws []string
	for _, sp := range t.spans() {
		raws = append(raws, t.s[sp.start:sp.end])
	}
	return Secrets(nil).with(raws, true)
}

// With returns s and the spellings and pieces of passwords, each a
// password as a driver's own parser read it (decoded).
func (s Secrets) With(passwords ...string) Secrets { return s.with(passwords, false) }

func (s Secrets) with(passwords []string, written bool) Secrets {
	out := slices.Clone(s)
	seen := make(map[string]bool, len(out))
	for _, x := range out {
		seen[x] = true
	}
	add := func(x string) {
		if len(x) >= MinSecret && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	for _, pw := range passwords {
		bases := []string{pw}
		if written {
			bases = append(bases, unquoteKV(pw))
			for _, unescape := range []func(string) (string, error){url.PathUnescape, url.QueryUnescape} {
				if dec, err := unescape(pw); err == nil {
					bases = append(bases, dec)
				}
			}
		}
		for _, b := range bases {
			q := strconv.Quote(b)
			for _, spelling := range []string{b, url.PathEscape(b), url.QueryEscape(b), q[1 : len(q)-1]} {
				forPieces(spelling, add)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// forPieces calls add with s and each piece of s between two separators
// (or an end of s), at most maxCutsAcross separators apart.
func forPieces(s string, add func(string)) {
	starts, ends := []int{0}, []int(nil)
	for i := 0; i < len(s); i++ {
		if isSeparator(s[i]) {
			ends = append(ends, i)
			starts = append(starts, i+1)
		}
	}
	ends = append(ends, len(s))
	for i, a := range starts {
		for _, b := range ends[i:min(len(ends), i+maxCutsAcross+1)] {
			if a < b {
				add(s[a:b])
			}
		}
	}
}

// isSeparator reports the bytes a parser may cut a password at: ASCII
// bytes but letters, digits, "-._~" and '%' (parsers cut before they
// decode).
func isSeparator(b byte) bool {
	return b < 0x80 && !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '-' || b == '.' || b == '_' || b == '~' || b == '%')
}

// unquoteKV returns a keyword/value value as libpq reads it: without its
// single quotes, backslash escapes applied.
func unquoteKV(raw string) string {
	if len(raw) >= 2 && raw[0] == '\'' && raw[len(raw)-1] == '\'' {
		raw = raw[1 : len(raw)-1]
	}
	return UnescapeKV(raw)
}
