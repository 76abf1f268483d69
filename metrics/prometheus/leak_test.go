package prometheus_test

import "github.com/respool/respool/leak"

var leakOff = leak.Config{Disabled: true}
