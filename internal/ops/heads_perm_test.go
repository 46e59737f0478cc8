package ops

import "testing"

// TestPermuteHeads checks the split (B, T, parts·h·d) → (B·h, T, d) of one
// part against the index formula, and that merging undoes it, for head
// widths with a whole-array move (16, 32, 64) and without (3), at sizes that
// share the batches among goroutines.
func TestPermuteHeads(t *testing.T) {
	for _, tc := range []struct{ b, t, h, d, part, parts int }{
		{2, 3, 2, 3, 0, 1}, {16, 50, 4, 32, 1, 3}, {3, 5, 2, 64, 2, 3}, {40, 20, 4, 64, 0, 1}, {1, 1, 1, 32, 0, 1}, {128, 50, 4, 16, 2, 3},
	} {
		row := tc.parts * tc.h * tc.d
		x := make([]float32, tc.b*tc.t*row)
		for i := range x {
			x[i] = float32(i)
		}
		heads := make([]float32, tc.b*tc.h*tc.t*tc.d)
		permuteHeads(x, heads, tc.b, tc.t, tc.h, tc.d, tc.part, tc.parts, true)
		for bi := 0; bi < tc.b; bi++ {
			for hi := 0; hi < tc.h; hi++ {
				for ti := 0; ti < tc.t; ti++ {
					for di := 0; di < tc.d; di++ {
						got := heads[((bi*tc.h+hi)*tc.t+ti)*tc.d+di]
						want := x[(bi*tc.t+ti)*row+(tc.part*tc.h+hi)*tc.d+di]
						if got != want {
							t.Fatalf("%+v: head (%d, %d) token %d feature %d = %g, want %g", tc, bi, hi, ti, di, got, want)
						}
					}
				}
			}
		}
		back := make([]float32, len(x))
		permuteHeads(heads, back, tc.b, tc.t, tc.h, tc.d, tc.part, tc.parts, false)
		for i, v := range back {
			part := i % row / (tc.h * tc.d)
			if want := x[i]; part == tc.part && v != want {
				t.Fatalf("%+v: merged[%d] = %g, want %g", tc, i, v, want)
			}
		}
	}
}
