package llama

// Parity with a PyTorch re-implementation of transformers' LLaMA-style
// decoders with its module names (tools/pytorch/llama_reference.py): tiny
// random checkpoints in testdata/parity/<case>/ (config.json and
// model.safetensors as transformers writes them) and the reference's
// float64 outputs in golden.safetensors.

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// parityCases are llama_reference.py's cases: GQA untied; MHA tied with
// llama's attention and MLP biases; Qwen2's q/k/v biases, tied, one
// key-value head; Llama 3.1's rope scaling with head_dim 8.
var parityCases = []string{"llama_gqa", "llama_mha_bias", "qwen2", "llama3"}

type golden struct {
	t *testing.T
	f *safetensors.File
}

func loadGolden(t *testing.T, name string) *golden {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join("testdata", "parity", name, "golden.safetensors"))
	require.NoError(t, err)
	return &golden{t: t, f: f}
}

func (g *golden) floats(name string) ([]float64, []int) {
	ts, ok := g.f.Tensor(name)
	require.True(g.t, ok, name)
	v, err := ts.Float64s()
	require.NoError(g.t, err)
	return v, ts.Shape
}

func (g *golden) ints(name string) ([]int, []int) {
	v, shape := g.floats(name)
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out, shape
}

// batch is a golden's left-padded batch: ids, mask and position ids as
// generate derives them, and the prompts without their padding.
func (g *golden) batch() (ids []int, mask []float64, pos []int, shape []int, prompts [][]int) {
	ids, shape = g.ints("in.input_ids")
	mask, _ = g.floats("in.attention_mask")
	pos, err := PositionIDs(mask, shape[1])
	require.NoError(g.t, err)
	prompts = make([][]int, shape[0])
	for i, id := range ids {
		if mask[i] != 0 {
			prompts[i/shape[1]] = append(prompts[i/shape[1]], id)
		}
	}
	return ids, mask, pos, shape, prompts
}

func loadCase(t *testing.T, name string, dt tensor.Dtype) *ForCausalLM {
	t.Helper()
	m, r, err := LoadForCausalLM(filepath.Join("testdata", "parity", name), models.Strict(), layers.WithDtype(dt))
	require.NoError(t, err)
	require.Zero(t, r)
	return m
}

// inputs makes the graph inputs of a batch.
func inputs(t *testing.T, g *layers.Graph, ids []int, mask []float64, pos []int, shape []int) Inputs {
	t.Helper()
	idn, err := g.IntConstant("input_ids", ids, shape...)
	require.NoError(t, err)
	mn, err := g.Constant("attention_mask", mask, shape...)
	require.NoError(t, err)
	pn, err := g.IntConstant("position_ids", pos, shape...)
	require.NoError(t, err)
	return Inputs{IDs: idn, Mask: mn, Positions: pn}
}

// The causal LM, loaded from transformers' layout, gives the reference's
// logits on a left-padded batch with position ids from the attention mask:
// in float64 within 1e-10, in float32 within 1e-4 (of the float64
// reference), for every case. (Seen to fail with Qwen2's biases dropped,
// and with the llama3 frequencies replaced by the base's. Rotary scores
// depend on position differences only, so a row's positions shifted as a
// whole, counted from its padding, give the same logits: no test sees
// that.)
func TestParityLogits(t *testing.T) {
	for _, name := range parityCases {
		for _, c := range []struct {
			dt  tensor.Dtype
			tol float64
		}{{tensor.Float64, 1e-10}, {tensor.Float32, 1e-4}} {
			t.Run(name+"/"+c.dt.String(), func(t *testing.T) {
				gd := loadGolden(t, name)
				m := loadCase(t, name, c.dt)
				ids, mask, pos, shape, _ := gd.batch()
				want, wshape := gd.floats("out.logits")
				g := m.Store.NewGraph()
				logits, err := m.Forward(g, inputs(t, g, ids, mask, pos, shape))
				require.NoError(t, err)
				require.Equal(t, wshape, []int(logits.Shape()))
				got, err := g.Evaluate(logits)
				require.NoError(t, err)
				v := wshape[2]
				for i := range want {
					if mask[i/v] == 0 {
						continue // padding: zero in the golden
					}
					require.InDelta(t, want[i], got[0][i], c.tol, "logit %d", i)
				}
			})
		}
	}
}

// Greedy generation through the KV cache, and without it, gives the
// reference's tokens (a full recompute of the left-padded batch each
// step), in float64 for every case and in float32 for one; beam search
// of one beam is the same greedy decoding. (Seen to fail with the llama3
// frequencies replaced by the base's.)
func TestParityGreedy(t *testing.T) {
	for _, name := range parityCases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			if dt == tensor.Float32 && name != "llama_gqa" {
				continue
			}
			t.Run(name+"/"+dt.String(), func(t *testing.T) {
				gd := loadGolden(t, name)
				m := loadCase(t, name, dt)
				_, _, _, _, prompts := gd.batch()
				want, wshape := gd.ints("out.generated")
				for _, noCache := range []bool{false, true} {
					got, err := m.Generate(prompts, GenerateConfig{SampleConfig: decode.Greedy(wshape[1]), NoCache: noCache})
					require.NoError(t, err)
					for r := range got {
						require.Equal(t, want[r*wshape[1]:(r+1)*wshape[1]], got[r], "row %d, no cache %v", r, noCache)
					}
				}
				hyps, err := m.BeamSearch(prompts, BeamConfig{BeamConfig: decode.BeamConfig{Beam: 1, MaxNewTokens: wshape[1]}})
				require.NoError(t, err)
				for r := range hyps {
					require.Equal(t, want[r*wshape[1]:(r+1)*wshape[1]], hyps[r][0].Tokens, "beam row %d", r)
				}
			})
		}
	}
}

// The causal LM loss of the labels (the ids, −100 at padding, shifted by
// one as transformers' ForCausalLMLoss shifts them) and its gradient for
// every parameter equal the reference's in float64 (1e-10).
func TestParityLossGradients(t *testing.T) {
	gd := loadGolden(t, "llama_gqa")
	m := loadCase(t, "llama_gqa", tensor.Float64)
	ids, mask, pos, shape, _ := gd.batch()
	labels, _ := gd.ints("in.labels")
	targets := make([]int, len(labels))
	for i := range targets {
		targets[i] = layers.IgnoreIndex
		if (i+1)%shape[1] != 0 {
			targets[i] = labels[i+1]
		}
	}
	g := m.Store.NewGraph(layers.Training())
	tg, err := g.IntConstant("targets", targets, shape...)
	require.NoError(t, err)
	loss, _, err := m.Loss(g, inputs(t, g, ids, mask, pos, shape), tg)
	require.NoError(t, err)
	params := g.Params()
	grads, err := gorgonia.Grad(loss, g.Learnables()...)
	require.NoError(t, err)
	var lv gorgonia.Value
	gorgonia.Read(loss, &lv)
	got, err := g.Evaluate(grads...)
	require.NoError(t, err)
	want, _ := gd.floats("out.loss")
	require.InDelta(t, want[0], lv.Data().(float64), 1e-10)
	require.Len(t, params, len(m.Store.Params()), "every parameter has a gradient")
	for i, p := range params {
		w, _ := gd.floats("grad." + p.Name)
		require.InDeltaSlice(t, w, got[i], 1e-10, p.Name)
	}
}

// A sequence classifier on the causal LM's backbone (its lm_head dropped
// and reported, score created) with the reference's score weights gives
// LlamaForSequenceClassification's logits on a right-padded batch, pooled
// at each row's last token that is not pad_token_id (1e-10); saved and
// loaded strictly it gives them again.
func TestParityClassifier(t *testing.T) {
	gd := loadGolden(t, "llama_gqa")
	dir := filepath.Join("testdata", "parity", "llama_gqa")
	c, r, err := LoadForSequenceClassification(dir, models.WithLabels("a", "b", "c"), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.Equal(t, []string{"score.weight"}, r.Created)
	require.Equal(t, []string{"lm_head.weight"}, r.Dropped)
	require.True(t, r.NewHead)
	sw, _ := gd.floats("score.weight")
	copy(c.Score.Weight.Value.Data().([]float64), sw)
	ids, shape := gd.ints("in.cls_ids")
	last, err := c.Config.LastTokens(ids, shape[1])
	require.NoError(t, err)
	require.Equal(t, []int{4, 2, 0}, last)
	want, _ := gd.floats("out.cls_logits")
	run := func(c *ForSequenceClassification) []float64 {
		g := c.Store.NewGraph()
		idn, err := g.IntConstant("ids", ids, shape...)
		require.NoError(t, err)
		ln, err := g.IntConstant("last", last, len(last))
		require.NoError(t, err)
		y, err := c.ClassLogits(g, models.ClassifierInputs{IDs: idn, Last: ln})
		require.NoError(t, err)
		got, err := g.Evaluate(y)
		require.NoError(t, err)
		return got[0]
	}
	require.InDeltaSlice(t, want, run(c), 1e-10)

	out := t.TempDir()
	require.NoError(t, c.Save(out))
	c2, _, err := LoadForSequenceClassification(out, models.Strict(), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, c2.Labels)
	require.Equal(t, run(c), run(c2))
}
