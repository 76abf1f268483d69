// Package fmttest helps the tests of respool's packages check that an
// exported value prints safely, with every verb of package fmt, while it is
// in use: fmt reads the fields of a value without its locks, so a value
// whose fields change (a map above all: "concurrent map iteration and map
// write") must print through a method of its own (issue 19 item 18).
package fmttest

import (
	"fmt"
	"sync"
)

// Verbs are the verbs of package fmt a program prints a value with.
var Verbs = []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"}

// WhileUsed prints v with each of Verbs, rounds times, while use runs over
// and over in another goroutine (i counts its calls), and returns what %v
// printed last. Under the race detector, a print that reads what use writes
// fails the test that calls it.
func WhileUsed(v any, rounds int, use func(i int)) string {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			use(i)
		}
	}()
	var last string
	for range rounds {
		for _, verb := range Verbs {
			if s := fmt.Sprintf(verb, v); verb == "%v" {
				last = s
			}
		}
	}
	close(stop)
	wg.Wait()
	return last
}
