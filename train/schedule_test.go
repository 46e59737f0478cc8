package train

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every schedule against PyTorch: nanoGPT's get_lr, and Hugging Face's
// linear and the Noam lambdas run through torch's LambdaLR.
func TestSchedulesGolden(t *testing.T) {
	g := readGolden(t)
	cosine, err := WarmupCosine(6e-4, 6e-5, 10, 100)
	require.NoError(t, err)
	linear, err := WarmupLinear(1e-3, 10, 50)
	require.NoError(t, err)
	noam, err := Noam(512, 40, 2)
	require.NoError(t, err)
	for _, c := range []struct {
		key, settings string
		s             Schedule
	}{
		{"sched.cosine", "lr=0.0006 min_lr=6e-05 warmup=10 decay_iters=100", cosine},
		{"sched.linear", "lr=0.001 warmup=10 total=50", linear},
		{"sched.noam", "d_model=512 warmup=40 factor=2.0", noam},
	} {
		require.Equal(t, c.settings, g.meta[c.key], c.key)
		want, _ := g.f64(c.key)
		got := make([]float64, len(want))
		for i := range got {
			got[i] = c.s.LR(i)
		}
		requireClose(t, want, got, 1e-15, c.key)
	}
}

// Boundary steps by hand.
func TestScheduleBoundaries(t *testing.T) {
	cosine, err := WarmupCosine(6e-4, 6e-5, 10, 100)
	require.NoError(t, err)
	linear, err := WarmupLinear(1e-3, 4, 10)
	require.NoError(t, err)
	noam, err := Noam(512, 4000, 1)
	require.NoError(t, err)
	noWarmup, err := WarmupCosine(1, 0, 0, 4)
	require.NoError(t, err)
	constant, err := Constant(3e-4)
	require.NoError(t, err)
	peak := 1 / math.Sqrt(512*4000.0)
	for _, c := range []struct {
		what string
		s    Schedule
		step int
		want float64
	}{
		{"cosine 0: (0+1)/(10+1) of the peak", cosine, 0, 6e-4 / 11},
		{"cosine warmup-1", cosine, 9, 6e-4 * 10 / 11},
		{"cosine warmup: the peak", cosine, 10, 6e-4},
		{"cosine halfway", cosine, 55, (6e-4 + 6e-5) / 2},
		{"cosine decay end", cosine, 100, 6e-5},
		{"cosine after", cosine, 101, 6e-5},
		{"cosine long after", cosine, 1 << 40, 6e-5},
		{"cosine negative", cosine, -5, 6e-4 / 11},
		{"cosine without warmup", noWarmup, 0, 1},
		{"cosine without warmup, step 2", noWarmup, 2, 0.5},
		{"linear 0", linear, 0, 0},
		{"linear warmup-1", linear, 3, 0.75e-3},
		{"linear warmup", linear, 4, 1e-3},
		{"linear halfway down", linear, 7, 0.5e-3},
		{"linear end", linear, 10, 0},
		{"linear after", linear, 11, 0},
		{"noam first update (n=1)", noam, 0, peak / 4000},
		{"noam warmup-1 (n=warmup): the peak", noam, 3999, peak},
		{"noam n=4·warmup", noam, 15999, peak / 2},
		{"constant", constant, 12345, 3e-4},
	} {
		if c.want == 0 {
			require.Zero(t, c.s.LR(c.step), c.what)
		} else {
			require.InEpsilon(t, c.want, c.s.LR(c.step), 1e-12, c.what)
		}
	}
	// Noam rises before its peak and falls after it.
	require.Less(t, noam.LR(3998), noam.LR(3999))
	require.Less(t, noam.LR(4000), noam.LR(3999))
}

// Bad schedule arguments are errors.
func TestScheduleErrors(t *testing.T) {
	for _, c := range []struct {
		what string
		err  error
		msg  string
	}{
		{"cosine lr 0", second(WarmupCosine(0, 0, 1, 2)), "learning rate 0 must be positive"},
		{"cosine lr NaN", second(WarmupCosine(math.NaN(), 0, 1, 2)), "learning rate NaN"},
		{"cosine min > max", second(WarmupCosine(1, 2, 1, 2)), "min lr 2 must be in [0, 1]"},
		{"cosine min < 0", second(WarmupCosine(1, -1, 1, 2)), "min lr -1"},
		{"cosine warmup < 0", second(WarmupCosine(1, 0, -1, 2)), "need 0 ≤ warmup (-1) < decay steps (2)"},
		{"cosine decay = warmup", second(WarmupCosine(1, 0, 5, 5)), "warmup (5) < decay steps (5)"},
		{"linear lr Inf", second(WarmupLinear(math.Inf(1), 1, 2)), "learning rate +Inf"},
		{"linear warmup > total", second(WarmupLinear(1, 3, 2)), "need 0 ≤ warmup (3) ≤ total (2)"},
		{"linear total 0", second(WarmupLinear(1, 0, 0)), "total > 0"},
		{"linear warmup < 0", second(WarmupLinear(1, -1, 2)), "warmup (-1)"},
		{"noam d_model 0", second(Noam(0, 4000, 1)), "d_model (0) and warmup (4000) must be positive"},
		{"noam warmup 0", second(Noam(512, 0, 1)), "warmup (0)"},
		{"noam factor 0", second(Noam(512, 4000, 0)), "factor 0 must be positive"},
		{"constant negative", second(Constant(-1)), "learning rate -1"},
	} {
		require.ErrorContains(t, c.err, c.msg, c.what)
	}
}

// second drops a constructor's schedule and keeps its error.
func second(_ Schedule, err error) error { return err }
