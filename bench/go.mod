module github.com/respool/respool/bench

go 1.25.0

require (
	github.com/cenkalti/backoff/v5 v5.0.3
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/jackc/puddle/v2 v2.2.3
	github.com/respool/respool v0.0.0-00010101000000-000000000000
	github.com/sony/gobreaker/v2 v2.4.0
	go.uber.org/goleak v1.3.0
	golang.org/x/time v0.15.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	golang.org/x/sync v0.22.0 // indirect
)

replace github.com/respool/respool => ../
