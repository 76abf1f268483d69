package dbguard

// rule is what a server's code says, before the context and the transport
// are taken into account.
type rule uint8

const (
	ruleNone              rule = iota // the code is not in the tables
	ruleFull                          // back-pressure, the server is full: Config.Pause
	ruleStartup                       // back-pressure, the server is not ready: Config.StartupPause
	ruleConnection                    // connection-level
	ruleConnectFailed                 // connection-level, no connection was made (nothing sent)
	ruleTxRetryable                   // whole-transaction retry
	ruleAmbiguous                     // outcome unknown
	ruleCaller                        // the caller's own error
	ruleStatementCanceled             // the server stopped the statement: the caller's cancel or a timeout
	ruleReadOnly                      // the server cannot take writes
	ruleAuth                          // the server refused the credentials: the caller's, and Classification.Auth
)
