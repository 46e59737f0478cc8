package models_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
)

// savedGPT saves gpt.Micro initialised with seed into a new directory,
// with the training-state files a run's checkpoint has beside it.
func savedGPT(t *testing.T, cfg gpt.Config, seed uint64) string {
	t.Helper()
	m, err := gpt.New(cfg, layers.WithSeed(seed))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "ckpt")
	require.NoError(t, m.Save(dir))
	for _, f := range []string{models.OptimizerFile, models.TrainerFile} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("state"), 0o644))
	}
	return dir
}

func readWeights(t *testing.T, dir string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(dir, models.WeightsFile))
	require.NoError(t, err)
	w := make(map[string][]float32)
	for _, name := range f.Names() {
		tt, _ := f.Tensor(name)
		v, err := tt.Float32s()
		require.NoError(t, err)
		w[name] = v
	}
	return w
}

// The average of three checkpoints is, tensor by tensor, their mean taken
// in float64 and rounded once; the result loads as a model of the family;
// it has the model's files (config, extra files of the last source) and no
// training state.
func TestAverageMeansWeights(t *testing.T) {
	srcs := []string{savedGPT(t, gpt.Micro(), 1), savedGPT(t, gpt.Micro(), 2), savedGPT(t, gpt.Micro(), 3)}
	require.NoError(t, os.WriteFile(filepath.Join(srcs[2], "generation_config.json"), []byte(`{"do_sample": false}`), 0o644))
	out := filepath.Join(t.TempDir(), "avg")
	require.NoError(t, models.Average(out, srcs))

	got := readWeights(t, out)
	ws := []map[string][]float32{readWeights(t, srcs[0]), readWeights(t, srcs[1]), readWeights(t, srcs[2])}
	require.Len(t, got, len(ws[0]))
	differs := 0
	for name, v := range got {
		require.Len(t, v, len(ws[0][name]), name)
		for i := range v {
			want := float32((float64(ws[0][name][i]) + float64(ws[1][name][i]) + float64(ws[2][name][i])) / 3)
			require.Equal(t, want, v[i], "%s[%d]", name, i)
			if v[i] != ws[0][name][i] {
				differs++
			}
		}
	}
	require.Greater(t, differs, 0, "the seeds gave equal weights: the test would not see an unaveraged copy")

	_, _, err := gpt.Load(out)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(out, "generation_config.json"))
	require.NoError(t, err)
	require.Equal(t, `{"do_sample": false}`, string(b))
	for _, f := range []string{models.OptimizerFile, models.TrainerFile} {
		require.NoFileExists(t, filepath.Join(out, f))
	}
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary directory left beside the output")

	// One checkpoint averaged with itself is itself, bit for bit.
	self := filepath.Join(t.TempDir(), "self")
	require.NoError(t, models.Average(self, []string{srcs[0], srcs[0]}))
	require.Equal(t, ws[0], readWeights(t, self))
}

// Checkpoints of different models, an existing output and a damaged
// weights file are errors that say what is wrong; nothing is written.
func TestAverageRefusesMismatches(t *testing.T) {
	a := savedGPT(t, gpt.Micro(), 1)
	out := filepath.Join(t.TempDir(), "avg")

	wider := gpt.Micro()
	wider.NEmbd *= 2
	require.ErrorContains(t, models.Average(out, []string{a, savedGPT(t, wider, 1)}), "have different config.json: only checkpoints of one model (one run) can be averaged")

	b := savedGPT(t, gpt.Micro(), 2)
	require.NoError(t, os.WriteFile(filepath.Join(a, models.TokenizerFile), []byte(`{}`), 0o644))
	require.ErrorContains(t, models.Average(out, []string{a, b}), "have different tokenizer.json files")
	require.NoError(t, os.Remove(filepath.Join(a, models.TokenizerFile)))

	// b loses a tensor.
	f, err := safetensors.ReadFile(filepath.Join(b, models.WeightsFile))
	require.NoError(t, err)
	var kept []safetensors.Tensor
	for _, name := range f.Names()[1:] {
		tt, _ := f.Tensor(name)
		kept = append(kept, tt)
	}
	require.NoError(t, safetensors.WriteFile(filepath.Join(b, models.WeightsFile), kept, f.Metadata()))
	require.ErrorContains(t, models.Average(out, []string{a, b}), "tensors, ")

	require.ErrorContains(t, models.Average(out, nil), "no checkpoints given")
	require.ErrorContains(t, models.Average(out, []string{a, filepath.Join(t.TempDir(), "nowhere")}), "nowhere")
	require.NoDirExists(t, out)

	require.NoError(t, os.Mkdir(out, 0o755))
	require.ErrorContains(t, models.Average(out, []string{a, a}), "already exists; give a new directory")
}
