package vit

// Parity with a PyTorch ViTMAEForPreTraining written with Hugging Face's
// module names (tools/pytorch/vit_mae_reference.py, which made
// testdata/mae: config.json and model.safetensors in transformers' layout,
// golden.safetensors with the pixels, the masking noise, the logits, mask,
// ids_restore, the loss without and with norm_pix_loss, and gradients of
// both, all float64). The script checks that leaving out the unshuffle or
// swapping the sine-cosine halves moves the logits by more than 0.05.

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

var maeDir = filepath.Join("testdata", "mae")

var maeGrads = []string{"vit.embeddings.patch_embeddings.projection.weight", "vit.embeddings.patch_embeddings.projection.bias",
	"vit.embeddings.cls_token", "vit.encoder.layer.0.attention.attention.query.weight",
	"vit.layernorm.weight", "decoder.decoder_embed.weight", "decoder.mask_token",
	"decoder.decoder_layers.1.output.dense.weight", "decoder.decoder_norm.weight",
	"decoder.decoder_pred.weight", "decoder.decoder_pred.bias"}

func TestMAEParity(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join(maeDir, "golden.safetensors"))
	require.NoError(t, err)
	gold := golden{t, f}
	pix64 := gold.floats("pixel_values")
	pixels := make([]float32, len(pix64))
	for i, v := range pix64 {
		pixels[i] = float32(v) // exact: the reference rounds them to float32
	}
	noise := gold.floats("noise")
	for _, c := range []struct {
		dt       tensor.Dtype
		norm     bool
		tol, gtl float64
	}{
		{tensor.Float64, false, 1e-10, 1e-10}, {tensor.Float64, true, 1e-10, 1e-10},
		{tensor.Float32, false, 1e-4, 1e-4}, {tensor.Float32, true, 1e-4, 1e-4},
	} {
		name := c.dt.String()
		if c.norm {
			name += "/norm_pix_loss"
		}
		t.Run(name, func(t *testing.T) {
			m, _, err := LoadViTMAEForPreTraining(maeDir, StoreOption(layers.WithDtype(c.dt)))
			require.NoError(t, err)
			m.Config.NormPixLoss = c.norm
			g := m.Store.NewGraph()
			mg, err := m.Graph(g, 2)
			require.NoError(t, err)
			require.NoError(t, mg.Set(pixels, noise))
			dl, err := gorgonia.Grad(mg.Loss, g.Learnables()...)
			require.NoError(t, err)
			byName := map[string]*gorgonia.Node{}
			for i, q := range g.Params() {
				byName[q.Name] = dl[i]
			}
			require.NotContains(t, byName, "vit.embeddings.position_embeddings", "the fixed tables are not learnable")
			require.NotContains(t, byName, "decoder.decoder_pos_embed")
			nodes := []*gorgonia.Node{mg.Logits, mg.Loss}
			for _, n := range maeGrads {
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

			require.Equal(t, gold.ints("ids_restore"), mg.Masking.IDsRestore)
			require.Equal(t, gold.floats("mask"), mg.Masking.Mask)
			lossKey, gradKey := "loss", "grad."
			if c.norm {
				lossKey, gradKey = "loss_norm", "grad_norm."
			}
			worst := map[string]float64{}
			check := func(key string, want, got []float64, tol float64) {
				require.Len(t, got, len(want), key)
				for j := range want {
					require.InDelta(t, want[j], got[j], tol, "%s[%d]", key, j)
					worst[key] = max(worst[key], abs(want[j]-got[j]))
				}
			}
			check("logits", gold.floats("logits"), asFloat64s(vals[0]), c.tol)
			check(lossKey, gold.floats(lossKey), asFloat64s(vals[1]), c.tol)
			for i, n := range maeGrads {
				check(gradKey+n, gold.floats(gradKey+n), asFloat64s(vals[2+i]), c.gtl)
			}
			t.Logf("largest differences %v", worst)
		})
	}
}
