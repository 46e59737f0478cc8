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

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
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

// ClassLogits runs c on a batch of texts (token ids, right-padded here
// with c.PadID()), with their token types when types is not nil, in a
// graph and machine of its own, as the classification pipeline does, and
// returns the class scores (B, len(c.ClassNames())) flat.
func ClassLogits(c models.Classifier, ids, types [][]int) ([]float64, error) {
	b, t := len(ids), 0
	for _, s := range ids {
		t = max(t, len(s))
	}
	flat, typ, mask, last := make([]int, b*t), make([]int, b*t), make([]float64, b*t), make([]int, b)
	for r, s := range ids {
		for i := range t {
			flat[r*t+i] = c.PadID()
			if i < len(s) {
				flat[r*t+i], mask[r*t+i] = s[i], 1
				if types != nil {
					typ[r*t+i] = types[r][i]
				}
			}
		}
		last[r] = len(s) - 1
	}
	g := c.ParamStore().NewGraph()
	var in models.ClassifierInputs
	var err error
	if in.IDs, err = g.IntConstant("input_ids", flat, b, t); err != nil {
		return nil, err
	}
	if in.Mask, err = g.Constant("attention_mask", mask, b, t); err != nil {
		return nil, err
	}
	if in.Last, err = g.IntConstant("last", last, b); err != nil {
		return nil, err
	}
	if types != nil {
		if in.TokenTypes, err = g.IntConstant("token_type_ids", typ, b, t); err != nil {
			return nil, err
		}
	}
	logits, err := c.ClassLogits(g, in)
	if err != nil {
		return nil, err
	}
	return Run(g, logits)
}

// Run compiles g, runs it once and returns the values of nodes, flat and
// concatenated.
func Run(g *layers.Graph, nodes ...*gorgonia.Node) ([]float64, error) {
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, err
	}
	var out []float64
	for _, v := range vals {
		x, err := layers.Float64s(v)
		if err != nil {
			return nil, err
		}
		out = append(out, x...)
	}
	return out, nil
}
