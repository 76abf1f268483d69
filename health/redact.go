package health

import "regexp"

// redacted replaces a password in a redacted text.
const redacted = "xxxxx"

var (
	// scheme://user:password@host: the password runs to the last '@'
	// before the next space, as the widest reading of a DSN.
	urlPassword = regexp.MustCompile(`(://[^:/@\s]*:)\S*@`)
	// password=value in keyword/value DSNs and query strings, quoted or not.
	keyPassword = regexp.MustCompile(`(?i)\b((?:ssl)?pass(?:word|wd)?|pwd)(\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s&;,)]*)`)
)

// Redact returns s with the passwords it may quote replaced by "xxxxx": the
// password of URL user information (postgres://u:secret@host) and the
// value of password, passwd, pwd and sslpassword keys. It is a last line
// of defence for error texts in reports: package driver already removes
// the DSN's password from its errors.
func Redact(s string) string {
	s = urlPassword.ReplaceAllString(s, "${1}"+redacted+"@")
	return keyPassword.ReplaceAllString(s, "${1}${2}"+redacted)
}
