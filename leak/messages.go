package leak

// Messages of the reports a pool logs; stable, so that logs can be searched.
// Each line also carries pool=<Config.Name>, event=leak_detected or
// held_too_long, and taken_at=<stack> (when CaptureStack is on);
// HELD-TOO-LONG lines carry held= and threshold=. Package pool lists every
// attribute of its log lines (its Attr constants) and delivers the same
// reports to Config.OnEvent (EventLeak, EventHeldTooLong).
const (
	MsgLeak = "LEAK-DETECTED"
	MsgHeld = "HELD-TOO-LONG"
)
