package bert

// Hugging Face's BertForTokenClassification and BertForQuestionAnswering
// have no pooler (add_pooling_layer=False). tools/pytorch/bert_heads_reference.py
// re-implements both with transformers' module names and wrote
// testdata/heads/{token,qa}: config.json and model.safetensors as
// save_pretrained lays them out (no bert.pooler.*), and golden.safetensors
// with the inputs and logits in float64. The same script's --check DIR
// loads a checkpoint zoo saved into its class with strict=True.

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

// Both directions: the reference's checkpoints load strictly, with nothing
// dropped or created, and give its logits; and what zoo saves from them has
// exactly the reference's keys and shapes.
func TestHeadsParityWithoutPooler(t *testing.T) {
	for _, head := range []string{"token", "qa"} {
		t.Run(head, func(t *testing.T) {
			dir := filepath.Join("testdata", "heads", head)
			f, err := safetensors.ReadFile(filepath.Join(dir, "golden.safetensors"))
			require.NoError(t, err)
			gold := golden{t, f}
			var (
				m      *Model
				save   func(string) error
				rep    LoadReport
				logits func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error)
				keys   []string
			)
			if head == "token" {
				c, r, err := LoadTokenClassifier(dir, layers.WithDtype(tensor.Float64))
				require.NoError(t, err)
				require.Equal(t, []string{"O", "B-PER", "I-PER"}, c.Labels)
				m, save, rep, keys = c.Model, c.Save, r, []string{"logits"}
				logits = func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
					l, err := c.Logits(g, in)
					return []*gorgonia.Node{l}, err
				}
			} else {
				q, r, err := LoadForQuestionAnswering(dir, layers.WithDtype(tensor.Float64))
				require.NoError(t, err)
				m, save, rep, keys = q.Model, q.Save, r, []string{"start_logits", "end_logits"}
				logits = func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
					s, e, err := q.Logits(g, in)
					return []*gorgonia.Node{s, e}, err
				}
			}
			require.Empty(t, rep.Dropped)
			require.Empty(t, rep.Created)
			require.Nil(t, m.Pooler)

			g := m.Store.NewGraph()
			in := Inputs{IDs: g.IntInput("input_ids", 2, 8), TokenTypes: g.IntInput("token_type_ids", 2, 8), Mask: g.Input("attention_mask", 2, 8)}
			setInts(t, in.IDs, gold.ints("input_ids"))
			setInts(t, in.TokenTypes, gold.ints("token_type_ids"))
			var mask []float64
			for _, v := range gold.ints("attention_mask") {
				mask = append(mask, float64(v))
			}
			setFloats(t, g, in.Mask, mask)
			outs, err := logits(g, in)
			require.NoError(t, err)
			vals := make([]gorgonia.Value, len(outs))
			for i := range outs {
				gorgonia.Read(outs[i], &vals[i])
			}
			vm := gorgonia.NewTapeMachine(g.ExprGraph)
			defer vm.Close()
			require.NoError(t, vm.RunAll())
			for i, k := range keys {
				want, got := gold.floats(k), asFloat64s(vals[i])
				require.Len(t, got, len(want), k)
				for j := range want {
					require.InDelta(t, want[j], got[j], 1e-10, "%s[%d]", k, j)
				}
			}

			// Saved by zoo: exactly the reference's keys and shapes.
			requireSavedAs(t, dir, save)
		})
	}
}
