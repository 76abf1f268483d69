package leak

// Messages of the reports a pool logs; stable, so that logs can be searched.
// Each line also carries pool=<Config.Name> and taken_at=<stack> (when
// CaptureStack is on); HELD-TOO-LONG lines carry held= and threshold=.
const (
	MsgLeak = "LEAK-DETECTED"
	MsgHeld = "HELD-TOO-LONG"
)
