// Package testctx gives tests a context with a bound, so that a test whose
// wait never ends fails instead of hanging, and a Deadline that passes when
// the test says so.
package testctx
