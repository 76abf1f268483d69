package health

import "github.com/respool/respool/internal/dsnform"

// Redact returns s with the passwords it may quote replaced by "xxxxx": the
// password of URL user information (postgres://u:secret@host), of a mysql
// DSN without a scheme (u:secret@tcp(host)/db), and the value of the
// password-like keys (password, sslpassword, passwd, pwd, pass, _auth_pass,
// oauth_client_secret, in any case), as respool's driver and chaos define
// a secret. It is a last line of defence for error texts in reports:
// package respool already removes the DSN's password from its errors.
func Redact(s string) string { return dsnform.RedactText(s) }
