// Package racetest checks that a package's inference entry points may be
// called from several goroutines at once: each call, made concurrently
// with the others, must give exactly what it gives alone. The checks are
// meant to run under the race detector (go test -race -run Concurrent),
// which also catches shared state that happens to give the right answer.
package racetest

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// Call is one inference call: Run makes it and returns its answer, which
// must not share memory that a later call writes (a copy of any buffer
// the callee reuses).
type Call struct {
	Name string
	Run  func() (any, error)
}

// Goroutines is how many goroutines Check runs the calls on: the number
// issue 34 tried.
const Goroutines = 8

// Check makes every call once alone, then runs all of them on Goroutines
// goroutines at once, rounds times each, every goroutine starting at a
// different call so that different calls overlap, and fails the test for
// each answer that differs from the call's answer alone (reflect.DeepEqual:
// floats compare with ==, so a result must be bit for bit the same up to
// the sign of zero) or that is an error.
func Check(t *testing.T, rounds int, calls ...Call) {
	t.Helper()
	want := make([]any, len(calls))
	for i, c := range calls {
		got, err := c.Run()
		if err != nil {
			t.Fatalf("%s alone: %v", c.Name, err)
		}
		want[i] = got
	}
	var wg sync.WaitGroup
	for g := range Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				for k := range calls {
					i := (g + r + k) % len(calls)
					got, err := calls[i].Run()
					if err != nil {
						t.Errorf("%s on goroutine %d: %v", calls[i].Name, g, err)
						continue
					}
					if !reflect.DeepEqual(got, want[i]) {
						t.Errorf("%s on goroutine %d differs from the call alone:\n got %s\nwant %s", calls[i].Name, g, clip(got), clip(want[i]))
					}
				}
			}
		}()
	}
	wg.Wait()
}

// clip prints v, at most 300 characters of it.
func clip(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
