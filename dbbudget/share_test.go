package dbbudget

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The census: share = Max / members (the process itself counted even when
// the database did not show its member lock yet); a wanting other below
// the share is needy; reclaim asks in-use objects back only for a needy
// one, idle ones for a borrower, nothing when nobody wants.
func TestCensusAndReclaim(t *testing.T) {
	const me = 1
	for _, c := range []struct {
		name      string
		max, held int
		rows      []holding
		want      census
		n         int
		inUse     bool
		mayBorrow bool
	}{
		{"alone, all held", 5, 5, []holding{{id: me, held: 5, member: true}},
			census{members: 1, share: 5}, 0, false, true},
		{"alone, not yet shown", 5, 0, nil,
			census{members: 1, share: 5}, 0, false, true},
		{"another idle: borrowing", 5, 5, []holding{{id: me, held: 5, member: true}, {id: 2, member: true}},
			census{members: 2, share: 2}, 0, false, true},
		{"another needy: in use too", 5, 5, []holding{{id: me, held: 5, member: true}, {id: 2, member: true, wants: true}},
			census{members: 2, share: 2, wanting: true, needy: true}, 3, true, false},
		{"another at its share, wanting: idle only", 6, 4, []holding{{id: me, held: 4, member: true}, {id: 2, held: 2, member: true, wants: true}, {id: 3, member: true}},
			census{members: 3, share: 2, wanting: true}, 2, false, true},
		{"needy other, me below share: may take", 6, 1, []holding{{id: me, held: 1, member: true}, {id: 2, member: true, wants: true}},
			census{members: 2, share: 3, wanting: true, needy: true}, 0, false, true},
		{"my own want is not another's", 4, 4, []holding{{id: me, held: 4, member: true, wants: true}, {id: 2, member: true}},
			census{members: 2, share: 2}, 0, false, true},
		{"more members than slots: share 0, nobody needy", 2, 2, []holding{{id: me, held: 2, member: true}, {id: 2, member: true, wants: true}, {id: 3, member: true}},
			census{members: 3, share: 0, wanting: true}, 2, false, true},
	} {
		got := takeCensus(c.max, me, c.rows)
		if got != c.want {
			t.Errorf("%s: census %+v; want %+v", c.name, got, c.want)
		}
		if n, inUse := got.reclaim(c.held); n != c.n || inUse != c.inUse {
			t.Errorf("%s: reclaim(%d) = %d, %v; want %d, %v", c.name, c.held, n, inUse, c.n, c.inUse)
		}
		if got.mayBorrow(c.held) != c.mayBorrow {
			t.Errorf("%s: mayBorrow(%d) = %v; want %v", c.name, c.held, !c.mayBorrow, c.mayBorrow)
		}
	}
}

// Each lock space of a name is its own, and another name's differ.
func TestKeysOf(t *testing.T) {
	a, b := keysOf("orders"), keysOf("billing")
	if a.slot == a.member || a.slot == a.want || a.member == a.want || a.slot < 0 || a.member < 0 || a.want < 0 {
		t.Errorf("keysOf(orders) = %+v; want three distinct non-negative keys", a)
	}
	if a.slot == b.slot || a.prefix == b.prefix || a.channel == b.channel {
		t.Errorf("keysOf(orders) %+v and keysOf(billing) %+v share a space", a, b)
	}
	if len(a.prefix)+1+6 > 64 || len(a.channel) > 63 {
		t.Errorf("keysOf(orders) = %+v: a MySQL lock name (64) or a channel (63) would be too long", a)
	}
}
