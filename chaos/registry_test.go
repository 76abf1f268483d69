package chaos

import (
	"database/sql"
	"testing"
)

func TestLookup(t *testing.T) {
	older, _ := newFake(t, Config{Name: "orders"})
	newer, _ := newFake(t, Config{Name: "orders"})
	if got := Lookup("orders"); got != newer {
		t.Fatalf("Lookup = %p, want the newest, %p", got, newer)
	}
	newer.Close()
	if got := Lookup("orders"); got != older {
		t.Fatalf("after Close: Lookup = %p, want %p", got, older)
	}
	older.Close()
	if got := Lookup("orders"); got != nil {
		t.Fatalf("all closed: Lookup = %p", got)
	}
}

// TestLookupFromDSN: the Connector database/sql makes from a DSN is found
// by its chaos_name, and switched at run time.
func TestLookupFromDSN(t *testing.T) {
	db, err := sql.Open(driverName, "fake:x?chaos_driver="+fakeName+"&chaos_name=TestLookupFromDSN&chaos_error=pg:40001&chaos_error_off=true")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := ctxT(t)
	if _, err := db.ExecContext(ctx, "UPDATE t"); err != nil {
		t.Fatal(err)
	}
	c := Lookup("TestLookupFromDSN")
	if c == nil {
		t.Fatal("not found")
	}
	if err := c.Enable("error"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE t"); err == nil {
		t.Fatal("the fault switched on did not hit")
	}
	db.Close()
	if Lookup("TestLookupFromDSN") != nil {
		t.Error("found after sql.DB.Close")
	}
}
