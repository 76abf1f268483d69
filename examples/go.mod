module github.com/respool/respool/examples

go 1.25.0

require github.com/respool/respool v0.0.0-00010101000000-000000000000

replace github.com/respool/respool => ../
