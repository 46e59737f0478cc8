package bert

// Parity with a PyTorch BertForPreTraining written with Hugging Face's
// module names (tools/pytorch/bert_reference.py, which made testdata/parity:
// config.json and model.safetensors in transformers' layout, and
// golden.safetensors with the inputs, the outputs and some gradients, all
// in float64). The script checks that the fixture's weights are large
// enough for a missing token-type embedding, a missing mask, an untied
// decoder or a missing pooler tanh to move the outputs by more than 0.05.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

var parityDir = filepath.Join("testdata", "parity")

type golden struct {
	t *testing.T
	f *safetensors.File
}

func (p golden) ints(name string) []int {
	ts, ok := p.f.Tensor(name)
	require.True(p.t, ok, name)
	v, err := ts.Int64s()
	require.NoError(p.t, err)
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func (p golden) floats(name string) []float64 {
	ts, ok := p.f.Tensor(name)
	require.True(p.t, ok, name)
	v, err := ts.Float64s()
	require.NoError(p.t, err)
	return v
}

func asFloat64s(v gorgonia.Value) []float64 {
	switch d := v.Data().(type) {
	case []float64:
		return d
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case float64:
		return []float64{d}
	case float32:
		return []float64{float64(d)}
	}
	return nil
}

// grads are the parameters whose gradients the reference wrote.
var grads = []string{"bert.embeddings.word_embeddings.weight", "bert.embeddings.token_type_embeddings.weight",
	"bert.embeddings.position_embeddings.weight", "bert.encoder.layer.0.attention.self.query.weight",
	"bert.encoder.layer.1.output.LayerNorm.weight", "bert.pooler.dense.weight",
	"cls.predictions.transform.dense.weight", "cls.predictions.bias", "cls.seq_relationship.weight"}

func TestParity(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join(parityDir, "golden.safetensors"))
	require.NoError(t, err)
	gold := golden{t, f}
	for _, c := range []struct {
		dt        tensor.Dtype
		out, grad float64
	}{{tensor.Float64, 1e-10, 1e-8}, {tensor.Float32, 1e-4, 1e-5}} {
		t.Run(c.dt.String(), func(t *testing.T) {
			p, r, err := LoadForPreTraining(parityDir, layers.WithDtype(c.dt))
			require.NoError(t, err)
			require.Empty(t, r.Created)
			require.Empty(t, r.Dropped)
			g := p.Store.NewGraph()
			in := Inputs{IDs: g.IntInput("input_ids", 2, 8), TokenTypes: g.IntInput("token_type_ids", 2, 8), Mask: g.Input("attention_mask", 2, 8)}
			labels, nsp := g.IntInput("labels", 2, 8), g.IntInput("next_sentence_label", 2)
			setInts(t, in.IDs, gold.ints("input_ids"))
			setInts(t, in.TokenTypes, gold.ints("token_type_ids"))
			mask := gold.ints("attention_mask")
			mf := make([]float64, len(mask))
			for i, m := range mask {
				mf[i] = float64(m)
			}
			setFloats(t, g, in.Mask, mf)
			setInts(t, labels, gold.ints("labels"))
			setInts(t, nsp, gold.ints("next_sentence_label"))

			// The hidden states and pooled output, from the same graph.
			h, err := p.Hidden(g, in)
			require.NoError(t, err)
			pooled, err := p.Pool(g, h)
			require.NoError(t, err)
			// Pooled runs the last layer for [CLS] alone: the same output.
			pooledFirst, err := p.Pooled(g, in)
			require.NoError(t, err)
			out, err := p.Loss(g, in, labels, nsp)
			require.NoError(t, err)
			learn := g.Learnables()
			dl, err := gorgonia.Grad(out.Loss, learn...)
			require.NoError(t, err)
			byName := map[string]*gorgonia.Node{}
			for i, q := range g.Params() {
				byName[q.Name] = dl[i]
			}
			nodes := []*gorgonia.Node{h, pooled, out.MLMLogits, out.NSPLogits, out.MLMLoss, out.NSPLoss, out.Loss, pooledFirst}
			for _, n := range grads {
				require.Contains(t, byName, n)
				nodes = append(nodes, byName[n])
			}
			vals := make([]gorgonia.Value, len(nodes))
			for i := range nodes {
				gorgonia.Read(nodes[i], &vals[i])
			}
			vm := gorgonia.NewTapeMachine(g.ExprGraph)
			defer vm.Close()
			require.NoError(t, vm.RunAll())
			worst := map[string]float64{}
			for i, key := range []string{"hidden", "pooled", "mlm_logits", "nsp_logits", "mlm_loss", "nsp_loss", "loss"} {
				want, got := gold.floats(key), asFloat64s(vals[i])
				require.Len(t, got, len(want), key)
				for j := range want {
					require.InDelta(t, want[j], got[j], c.out, "%s[%d]", key, j)
					worst[key] = max(worst[key], abs(want[j]-got[j]))
				}
			}
			want, got := gold.floats("pooled"), asFloat64s(vals[7])
			require.Len(t, got, len(want), "Pooled")
			for j := range want {
				require.InDelta(t, want[j], got[j], c.out, "Pooled[%d]", j)
			}
			for i, n := range grads {
				want, got := gold.floats("grad."+n), asFloat64s(vals[8+i])
				require.Len(t, got, len(want), n)
				for j := range want {
					require.InDelta(t, want[j], got[j], c.grad, "grad %s[%d]", n, j)
					worst["grad"] = max(worst["grad"], abs(want[j]-got[j]))
				}
			}
			t.Logf("%s: largest differences %v", c.dt, worst)
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// The parity checkpoint loaded as a BertForMaskedLM gives the reference MLM
// loss, with NSP dropped and nothing created; a BertForMaskedLM checkpoint
// without a pooler (as transformers writes one) loads too, the pooler
// reported as created.
func TestParityMaskedLM(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join(parityDir, "golden.safetensors"))
	require.NoError(t, err)
	gold := golden{t, f}
	p, r, err := LoadForMaskedLM(parityDir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.Equal(t, []string{"cls.seq_relationship.bias", "cls.seq_relationship.weight"}, r.Dropped)
	require.Empty(t, r.Created)
	g := p.Store.NewGraph()
	in := Inputs{IDs: g.IntInput("input_ids", 2, 8), TokenTypes: g.IntInput("token_type_ids", 2, 8), Mask: g.Input("attention_mask", 2, 8)}
	labels := g.IntInput("labels", 2, 8)
	setInts(t, in.IDs, gold.ints("input_ids"))
	setInts(t, in.TokenTypes, gold.ints("token_type_ids"))
	var mf []float64
	for _, m := range gold.ints("attention_mask") {
		mf = append(mf, float64(m))
	}
	setFloats(t, g, in.Mask, mf)
	setInts(t, labels, gold.ints("labels"))
	loss, _, err := p.Loss(g, in, labels)
	require.NoError(t, err)
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	require.InDelta(t, gold.floats("mlm_loss")[0], loss.Value().Data().(float64), 1e-10)

	// Without the pooler and NSP, as BertForMaskedLM.save_pretrained writes.
	src, err := safetensors.ReadFile(filepath.Join(parityDir, "model.safetensors"))
	require.NoError(t, err)
	var ts []safetensors.Tensor
	for _, n := range src.Names() {
		if !strings.HasPrefix(n, "bert.pooler.") && !strings.HasPrefix(n, "cls.seq_relationship.") {
			x, _ := src.Tensor(n)
			ts = append(ts, x)
		}
	}
	dir := t.TempDir()
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}))
	cfg, err := readConfig(parityDir)
	require.NoError(t, err)
	require.NoError(t, layers.WriteConfig(dir, cfg))
	_, r, err = LoadForMaskedLM(dir)
	require.NoError(t, err)
	require.Empty(t, r.Dropped)
	require.Equal(t, []string{"bert.pooler.dense.weight", "bert.pooler.dense.bias"}, r.Created)
}
