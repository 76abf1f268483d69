module github.com/respool/respool/bench

go 1.25.0

require (
	github.com/jackc/puddle/v2 v2.2.3
	github.com/respool/respool v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require golang.org/x/sync v0.22.0 // indirect

replace github.com/respool/respool => ../
