// Package dsnform is the one home of DSN text for respool's driver, chaos
// and health: it tells the form of a DSN (a postgres URL, libpq
// keyword/value, or the mysql form), reads it once (Read: the keys of a
// namespace such as respool_ split out, the rest for the driver, and its
// secrets), refuses a password that its form cannot carry as written,
// defines what a secret is (SecretKeys, the widest reading of a password
// written with separators) and redacts it from a DSN (Redact), from errors
// (Secrets.Redact) and from free text (RedactText), and writes keys back
// into a DSN (Append). It imports no driver: the callers add the passwords
// their drivers' own parsers read (Secrets.With).
package dsnform
