package gpt

// Parity with a PyTorch GPT-2 written with Hugging Face's module names and
// Conv1D layout (tools/pytorch/gpt2_reference.py, see its README): a tiny
// random GPT-2 saved as model.safetensors + config.json, and golden logits
// and greedy continuations in golden.safetensors.

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

var parityDir = filepath.Join("testdata", "parity")

type parity struct {
	t *testing.T
	f *safetensors.File
}

func loadParity(t *testing.T) *parity {
	f, err := safetensors.ReadFile(filepath.Join(parityDir, "golden.safetensors"))
	require.NoError(t, err)
	return &parity{t: t, f: f}
}

func (p *parity) ints(name string) ([]int, []int) {
	ts, ok := p.f.Tensor(name)
	require.True(p.t, ok, name)
	v, err := ts.Int64s()
	require.NoError(p.t, err)
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out, ts.Shape
}

func (p *parity) floats(name string) []float32 {
	ts, ok := p.f.Tensor(name)
	require.True(p.t, ok, name)
	v, err := ts.Float32s()
	require.NoError(p.t, err)
	return v
}

// logits runs the model on ids (B, T) with an optional mask and positions.
func logitsOf(t *testing.T, m *Model, ids []int, shape []int, mask []float32, pos []int) []float32 {
	g := m.Store.NewGraph()
	in := Inputs{IDs: g.IntInput("input_ids", shape...)}
	setInts(t, in.IDs, ids)
	if mask != nil {
		in.Mask = g.Input("attention_mask", shape...)
		copy(in.Mask.Value().Data().([]float32), mask)
		in.Positions = g.IntInput("position_ids", shape...)
		setInts(t, in.Positions, pos)
	}
	y, err := m.Forward(g, in)
	require.NoError(t, err)
	v := graphtest.Run(t, g.ExprGraph, y)[0]
	return v.(*tensor.Dense).Data().([]float32)
}

func TestParityLogits(t *testing.T) {
	p := loadParity(t)
	m, _, err := Load(parityDir)
	require.NoError(t, err)
	ids, shape := p.ints("input_ids")
	want := p.floats("logits")
	got := logitsOf(t, m, ids, shape, nil, nil)
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-4, "logit %d", i)
	}
}

// A left-padded batch with Hugging Face's position ids (cumsum(mask) − 1)
// gives the reference logits at every real token.
func TestParityPaddedBatch(t *testing.T) {
	p := loadParity(t)
	m, _, err := Load(parityDir)
	require.NoError(t, err)
	ids, shape := p.ints("input_ids_batch")
	maskInts, _ := p.ints("attention_mask_batch")
	mask := make([]float32, len(maskInts))
	pos := make([]int, len(maskInts))
	for r := 0; r < shape[0]; r++ {
		n := 0
		for j := 0; j < shape[1]; j++ {
			i := r*shape[1] + j
			mask[i] = float32(maskInts[i])
			if maskInts[i] == 1 {
				pos[i] = n
				n++
			}
		}
	}
	want := p.floats("logits_batch")
	got := logitsOf(t, m, ids, shape, mask, pos)
	v := m.Config.VocabSize
	checked := 0
	for i := 0; i < len(mask); i++ {
		if mask[i] == 0 {
			continue // a padded query's output is not defined the same way
		}
		for j := 0; j < v; j++ {
			require.InDelta(t, want[i*v+j], got[i*v+j], 1e-4, "position %d logit %d", i, j)
		}
		checked++
	}
	require.Equal(t, 11, checked)
}

// Greedy decoding reproduces the reference tokens exactly, with and without
// the cache, and past the 24-token context through the sliding window.
func TestParityGreedy(t *testing.T) {
	p := loadParity(t)
	m, _, err := Load(parityDir)
	require.NoError(t, err)
	prompt, _ := p.ints("prompt")
	for _, c := range []struct{ key string }{{"greedy"}, {"greedy_long"}} {
		want, _ := p.ints(c.key)
		for _, noCache := range []bool{false, true} {
			cfg := Greedy(len(want))
			cfg.NoCache = noCache
			got, err := m.Generate([][]int{prompt}, cfg)
			require.NoError(t, err)
			require.Equal(t, want, got[0], "%s, no cache %v", c.key, noCache)
		}
	}
}

// The reference checkpoint, saved by us and loaded back, is byte-for-byte
// the same tensors: Save writes GPT-2's layout.
func TestSaveWritesHFLayout(t *testing.T) {
	m, _, err := Load(parityDir)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, m.Save(dir))
	ref, err := safetensors.ReadFile(filepath.Join(parityDir, layers.WeightsFile))
	require.NoError(t, err)
	ours, err := safetensors.ReadFile(filepath.Join(dir, layers.WeightsFile))
	require.NoError(t, err)
	require.Equal(t, ref.Names(), ours.Names())
	for _, n := range ref.Names() {
		a, _ := ref.Tensor(n)
		b, _ := ours.Tensor(n)
		require.Equal(t, a.Shape, b.Shape, n)
		require.Equal(t, a.Data, b.Data, n)
	}
	back, _, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, m.Config, back.Config)
}
