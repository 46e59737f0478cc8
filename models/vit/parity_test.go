package vit

// Parity with a PyTorch ViTForImageClassification written with Hugging
// Face's module names (tools/pytorch/vit_reference.py, which made
// testdata/parity: config.json and model.safetensors in transformers'
// layout, and golden.safetensors with the pixels, labels, hidden states,
// logits (class-token and mean pooling), loss and some gradients, all in
// float64). The script checks that the fixture's weights are large enough
// for a missing class token, missing positions, a column-major patch order
// or post-norm blocks to move the logits by more than 0.05.

import (
	"path/filepath"
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

func readGolden(t *testing.T) golden {
	f, err := safetensors.ReadFile(filepath.Join(parityDir, "golden.safetensors"))
	require.NoError(t, err)
	return golden{t, f}
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
var grads = []string{"vit.embeddings.patch_embeddings.projection.weight", "vit.embeddings.patch_embeddings.projection.bias",
	"vit.embeddings.cls_token", "vit.embeddings.position_embeddings",
	"vit.encoder.layer.0.attention.attention.query.weight", "vit.encoder.layer.1.layernorm_after.weight",
	"vit.layernorm.weight", "classifier.weight", "classifier.bias"}

func TestParity(t *testing.T) {
	gold := readGolden(t)
	for _, c := range []struct {
		dt        tensor.Dtype
		out, grad float64
	}{{tensor.Float64, 1e-10, 1e-10}, {tensor.Float32, 1e-4, 1e-4}} {
		t.Run(c.dt.String(), func(t *testing.T) {
			p, err := LoadClassifier(parityDir, StoreOption(layers.WithDtype(c.dt)))
			require.NoError(t, err)
			require.Equal(t, []string{"cat", "dog", "bird"}, p.Labels)
			g := p.Store.NewGraph()
			pixels, labels := g.Input("pixel_values", 2, 3, 8, 8), g.IntInput("labels", 2)
			require.NoError(t, layers.SetFloats(pixels, gold.floats("pixel_values")))
			copy(labels.Value().Data().([]int), gold.ints("labels"))

			h, err := p.Features(g, pixels)
			require.NoError(t, err)
			loss, logits, err := p.Loss(g, pixels, labels, 0)
			require.NoError(t, err)
			dl, err := gorgonia.Grad(loss, g.Learnables()...)
			require.NoError(t, err)
			byName := map[string]*gorgonia.Node{}
			for i, q := range g.Params() {
				byName[q.Name] = dl[i]
			}
			nodes := []*gorgonia.Node{h, logits, loss}
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
			for i, key := range []string{"hidden", "logits", "loss"} {
				want, got := gold.floats(key), asFloat64s(vals[i])
				require.Len(t, got, len(want), key)
				for j := range want {
					require.InDelta(t, want[j], got[j], c.out, "%s[%d]", key, j)
					worst[key] = max(worst[key], abs(want[j]-got[j]))
				}
			}
			for i, n := range grads {
				want, got := gold.floats("grad."+n), asFloat64s(vals[3+i])
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

// Mean pooling averages the patch tokens' final (normed) states:
// classifier(h[:, 1:].mean(1)) in the reference.
func TestParityMeanPooling(t *testing.T) {
	gold := readGolden(t)
	p, err := LoadClassifier(parityDir, StoreOption(layers.WithDtype(tensor.Float64)), WithPooling(PoolMean))
	require.NoError(t, err)
	g := p.Store.NewGraph()
	pixels := g.Input("pixel_values", 2, 3, 8, 8)
	require.NoError(t, layers.SetFloats(pixels, gold.floats("pixel_values")))
	logits, err := p.ClassLogits(g, pixels)
	require.NoError(t, err)
	want := requireRunAs(t, g, logits, gold, "mean_logits")
	require.Greater(t, abs(want[0]-gold.floats("logits")[0]), 1e-3, "the two poolings differ")
}

// requireRunAs runs g and requires out's values to be the golden's key
// within 1e-10; it returns the golden values.
func requireRunAs(t *testing.T, g *layers.Graph, out *gorgonia.Node, gold golden, key string) []float64 {
	t.Helper()
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	want, got := gold.floats(key), asFloat64s(out.Value())
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-10, "%s[%d]", key, i)
	}
	return want
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
