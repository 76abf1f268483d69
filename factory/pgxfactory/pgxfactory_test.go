package pgxfactory

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewRejectsABadDSNWithoutShowingThePassword(t *testing.T) {
	_, err := New("postgres://app:s3cret-pw@db.example.com:notaport/app")
	if err == nil {
		t.Fatal("New accepted a DSN with a bad port")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("error shows the password: %v", err)
	}
}

func TestCreateHonoursItsContext(t *testing.T) {
	f, err := New("postgres://app@127.0.0.1:1/app?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c, err := f.Create(ctx); err == nil {
		c.Close(ctx)
		t.Fatal("Create connected to a closed port")
	}
}
