package bert

// Parity of sentence embeddings with sentence-transformers' Pooling and
// Normalize re-implemented in PyTorch (tools/pytorch/sentence_reference.py,
// which wrote testdata/sentence/golden.safetensors from the BERT of
// testdata/parity and the RoBERTa of testdata/roberta/mlm): a padded batch
// of three texts, each pooling mode, plain and normalised.

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

// sentenceGolden reads testdata/sentence/golden.safetensors.
func sentenceGolden(t *testing.T) golden {
	f, err := safetensors.ReadFile(filepath.Join("testdata", "sentence", "golden.safetensors"))
	require.NoError(t, err)
	return golden{t, f}
}

// unpadded are the rows of ids (B·T) that mask keeps.
func unpadded(ids, mask []int, b int) [][]int {
	t := len(ids) / b
	out := make([][]int, b)
	for r := range b {
		for j := range t {
			if mask[r*t+j] == 1 {
				out[r] = append(out[r], ids[r*t+j])
			}
		}
	}
	return out
}

var poolingModes = []struct {
	name string
	p    Pooling
}{
	{"cls", Pooling{CLSToken: true}},
	{"max", Pooling{MaxTokens: true}},
	{"mean", Pooling{MeanTokens: true}},
	{"mean_sqrt_len", Pooling{MeanSqrtLenTokens: true}},
}

func TestSentenceEmbeddingsParity(t *testing.T) {
	gold := sentenceGolden(t)
	for _, enc := range []struct{ prefix, dir string }{{"bert.", parityDir}, {"roberta.", filepath.Join("testdata", "roberta", "mlm")}} {
		for _, c := range []struct {
			dt  tensor.Dtype
			tol float64
		}{{tensor.Float64, 1e-10}, {tensor.Float32, 1e-5}} {
			m, _, err := Load(enc.dir, layers.WithDtype(c.dt))
			require.NoError(t, err)
			ids := unpadded(gold.ints(enc.prefix+"input_ids"), gold.ints(enc.prefix+"attention_mask"), 3)
			require.Less(t, len(ids[1]), len(ids[0]), "the batch is padded")
			for _, mode := range poolingModes {
				for _, norm := range []bool{false, true} {
					name := enc.prefix + mode.name
					if norm {
						name += ".normalized"
					}
					t.Run(name+"/"+c.dt.String(), func(t *testing.T) {
						p := mode.p
						p.WordEmbeddingDimension = m.Config.HiddenSize
						s := &SentenceEmbeddings{Model: m, Pooling: p, Normalize: norm, pipe: pipe{cache: &graphs{}}}
						got, err := s.embedIDs(ids)
						require.NoError(t, err)
						want := gold.floats(name)
						d := m.Config.HiddenSize
						for r := range got {
							require.InDeltaSlice(t, want[r*d:(r+1)*d], got[r], c.tol, "row %d", r)
						}
					})
				}
			}
		}
	}
}

// TestSentencePoolingConcatenates checks several modes at once against
// the golden single modes, in sentence-transformers' order: cls, max,
// mean, mean_sqrt_len.
func TestSentencePoolingConcatenates(t *testing.T) {
	gold := sentenceGolden(t)
	m, _, err := Load(parityDir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	d := m.Config.HiddenSize
	p := Pooling{WordEmbeddingDimension: d, CLSToken: true, MaxTokens: true, MeanTokens: true, MeanSqrtLenTokens: true}
	require.Equal(t, 4*d, p.Dim())
	s := &SentenceEmbeddings{Model: m, Pooling: p, pipe: pipe{cache: &graphs{}}}
	got, err := s.embedIDs(unpadded(gold.ints("bert.input_ids"), gold.ints("bert.attention_mask"), 3))
	require.NoError(t, err)
	for r := range got {
		for i, mode := range []string{"cls", "max", "mean", "mean_sqrt_len"} {
			require.InDeltaSlice(t, gold.floats("bert." + mode)[r*d:(r+1)*d], got[r][i*d:(i+1)*d], 1e-10, "row %d %s", r, mode)
		}
	}
}

// TestSentenceForwardParity checks the training graph's pooling
// (Forward, with PoolWeights) against the same golden values.
func TestSentenceForwardParity(t *testing.T) {
	gold := sentenceGolden(t)
	m, _, err := Load(parityDir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	d := m.Config.HiddenSize
	ids, mask := gold.ints("bert.input_ids"), gold.ints("bert.attention_mask")
	b, tl := 3, len(ids)/3
	for _, mode := range poolingModes {
		for _, norm := range []bool{false, true} {
			name := "bert." + mode.name
			if norm {
				name += ".normalized"
			}
			t.Run(name, func(t *testing.T) {
				p := mode.p
				p.WordEmbeddingDimension = d
				s := &SentenceEmbeddings{Model: m, Pooling: p, Normalize: norm}
				g := m.Store.NewGraph()
				in := Inputs{IDs: g.IntInput("input_ids", b, tl), Mask: g.Input("attention_mask", b, tl)}
				w := g.Input("pool_weights", b, tl)
				setInts(t, in.IDs, ids)
				var mk, wv []float64
				for r := range b {
					n := 0
					for j := range tl {
						mk = append(mk, float64(mask[r*tl+j]))
						n += mask[r*tl+j]
					}
					x, ok := p.PoolWeights(n, tl)
					if mode.name == "max" {
						require.False(t, ok)
						x = make([]float64, tl)
					}
					wv = append(wv, x...)
				}
				setFloats(t, g, in.Mask, mk)
				setFloats(t, g, w, wv)
				e, err := s.Forward(g, in, w)
				if mode.name == "max" {
					require.ErrorContains(t, err, "not max")
					return
				}
				require.NoError(t, err)
				got, err := g.Evaluate(e)
				require.NoError(t, err)
				require.InDeltaSlice(t, gold.floats(name), got[0], 1e-10)
			})
		}
	}
}
