// Package testctx gives tests a context with a bound, so that a test whose
// wait never ends fails instead of hanging.
package testctx
