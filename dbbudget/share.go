package dbbudget

// holding is what the database shows of one process of the budget: its
// coordinating session's id (PostgreSQL's backend PID, MySQL's connection
// id), the slot locks it holds, whether it holds the member lock (it is a
// live member) and the want lock (it was refused an Acquire lately).
type holding struct {
	id     int64
	held   int
	member bool
	wants  bool
}

// census is the fair-share view a heartbeat takes of the budget: how many
// live members share it, each one's share, and whether another process
// wants slots (wanting) and is below its share (needy).
type census struct {
	members int
	share   int
	wanting bool // another process was refused lately
	needy   bool // ... and holds fewer slots than its share
}

// takeCensus reads rows, the holdings the database shows, for the process
// whose session is me, with max slots in all. The share is
// floor(max/members); the process itself counts as a member even when the
// rows do not show it (a census taken as its session began).
func takeCensus(max int, me int64, rows []holding) census {
	var c census
	self := false
	for _, r := range rows {
		if r.member {
			c.members++
			self = self || r.id == me
		}
	}
	if !self {
		c.members++
	}
	c.share = max / c.members
	for _, r := range rows {
		if r.id == me || !r.wants {
			continue
		}
		c.wanting = true
		c.needy = c.needy || r.held < c.share
	}
	return c
}

// reclaim is what the process holding held slots asks of its pools: n
// objects back, and whether those in use count too (as they are given
// back). A needy other takes what it is owed from in-use objects too; a
// wanting one (at its share already, borrowing) only idle ones; nobody
// wanting: nothing (0, false ends an earlier request).
func (c census) reclaim(held int) (n int, inUse bool) {
	over := held - c.share
	switch {
	case over <= 0 || !c.wanting:
		return 0, false
	case c.needy:
		return over, true
	default:
		return over, false
	}
}

// mayBorrow reports whether a process holding held slots may take one more
// free slot: always below its share; beyond it, unless a needy other
// waits.
func (c census) mayBorrow(held int) bool { return held < c.share || !c.needy }
