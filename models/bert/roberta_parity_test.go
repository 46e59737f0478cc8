package bert

// Parity with PyTorch RobertaForMaskedLM, RobertaForSequenceClassification,
// RobertaForTokenClassification and RobertaForQuestionAnswering written with
// transformers' module names (tools/pytorch/roberta_reference.py, which made
// testdata/roberta/<head>: config.json and model.safetensors as
// save_pretrained lays them out, and golden.safetensors with a padded
// batch, the logits, a loss sum(logits·r) and the gradient of every
// parameter, in float64). The script checks that BERT's positions 0…T−1
// instead of RoBERTa's, or a classification head without its tanh, move the
// logits by more than 0.05.

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// robertaHead loads testdata/roberta/<head> and returns its model, the
// output nodes' builder and their golden names.
func robertaHead(t *testing.T, head string, dt tensor.Dtype, strict bool) (*Model, func(string) error, LoadReport, func(*layers.Graph, Inputs) ([]*gorgonia.Node, error), []string) {
	return variantHead(t, "roberta", head, dt, strict)
}

// variantHead loads testdata/<variant>/<head> (a reference script's
// fixture) as robertaHead does.
func variantHead(t *testing.T, variant, head string, dt tensor.Dtype, strict bool) (*Model, func(string) error, LoadReport, func(*layers.Graph, Inputs) ([]*gorgonia.Node, error), []string) {
	dir := filepath.Join("testdata", variant, head)
	opts := []models.LoadOption{layers.WithDtype(dt)}
	if strict {
		opts = append(opts, models.Strict())
	}
	one := func(f func(*layers.Graph, Inputs) (*gorgonia.Node, error)) func(*layers.Graph, Inputs) ([]*gorgonia.Node, error) {
		return func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
			n, err := f(g, in)
			return []*gorgonia.Node{n}, err
		}
	}
	switch head {
	case "pre": // ELECTRA's discriminator
		p, r, err := LoadElectraForPreTraining(dir, opts...)
		require.NoError(t, err)
		return p.Model, p.Save, r, one(p.Forward), []string{"logits"}
	case "mlm":
		p, r, err := LoadForMaskedLM(dir, opts...)
		require.NoError(t, err)
		return p.Model, p.Save, r, one(p.Forward), []string{"logits"}
	case "seq":
		c, r, err := LoadForSequenceClassification(dir, opts...)
		require.NoError(t, err)
		require.Equal(t, []string{"neg", "pos", "mixed"}, c.Labels)
		require.Equal(t, c.Config.variant().cls != nil, c.Dense != nil, "the classification head is the model type's")
		return c.Model, c.Save, r, one(c.Logits), []string{"logits"}
	case "pretrain":
		p, r, err := LoadForPreTraining(dir, opts...)
		require.NoError(t, err)
		return p.Model, p.Save, r, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
			mlm, pair, err := p.Forward(g, in)
			return []*gorgonia.Node{mlm, pair}, err
		}, []string{"prediction_logits", "sop_logits"}
	case "token":
		c, r, err := LoadForTokenClassification(dir, opts...)
		require.NoError(t, err)
		return c.Model, c.Save, r, one(c.Logits), []string{"logits"}
	}
	q, r, err := LoadForQuestionAnswering(dir, opts...)
	require.NoError(t, err)
	return q.Model, q.Save, r, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
		s, e, err := q.Logits(g, in)
		return []*gorgonia.Node{s, e}, err
	}, []string{"start_logits", "end_logits"}
}

func TestRobertaParity(t *testing.T) {
	variantParity(t, "roberta", func(t *testing.T, m *Model) {
		require.Nil(t, m.Pooler, "none of RoBERTa's heads has a pooler")
		require.Equal(t, RobertaModelType, m.Config.ModelType)
	})
}

// variantParity runs each head of testdata/<variant> in float64 and
// float32 against its golden logits and gradients; check sees each model.
func variantParity(t *testing.T, variant string, check func(*testing.T, *Model), more ...string) {
	heads := append([]string{"mlm", "seq", "token", "qa"}, more...)
	if _, err := os.Stat(filepath.Join("testdata", variant, "pretrain")); err == nil {
		heads = append(heads, "pretrain") // ALBERT's: MLM and sentence order
	}
	for _, head := range heads {
		for _, c := range []struct {
			dt        tensor.Dtype
			out, grad float64
		}{{tensor.Float64, 1e-10, 1e-10}, {tensor.Float32, 1e-4, 1e-4}} {
			t.Run(head+"/"+c.dt.String(), func(t *testing.T) {
				f, err := safetensors.ReadFile(filepath.Join("testdata", variant, head, "golden.safetensors"))
				require.NoError(t, err)
				gold := golden{t, f}
				m, _, rep, build, keys := variantHead(t, variant, head, c.dt, true)
				require.Empty(t, rep.Dropped)
				require.Empty(t, rep.Created)
				check(t, m)

				ids := gold.ints("input_ids")
				bs, tl := 2, len(ids)/2
				g := m.Store.NewGraph()
				in := Inputs{IDs: g.IntInput("input_ids", bs, tl), Mask: g.Input("attention_mask", bs, tl)}
				setInts(t, in.IDs, ids)
				var mask []float64
				for _, v := range gold.ints("attention_mask") {
					mask = append(mask, float64(v))
				}
				setFloats(t, g, in.Mask, mask)
				if slices.Contains(f.Names(), "token_type_ids") {
					in.TokenTypes = g.IntInput("token_type_ids", bs, tl)
					setInts(t, in.TokenTypes, gold.ints("token_type_ids"))
				}
				outs, err := build(g, in)
				require.NoError(t, err)
				var loss *gorgonia.Node
				for i, k := range keys {
					r := g.Input("r."+k, outs[i].Shape().Clone()...)
					setFloats(t, g, r, gold.floats("r."+k))
					p, err := gorgonia.HadamardProd(outs[i], r)
					require.NoError(t, err)
					s, err := gorgonia.Sum(p)
					require.NoError(t, err)
					if loss == nil {
						loss = s
					} else {
						loss, err = gorgonia.Add(loss, s)
						require.NoError(t, err)
					}
				}
				dl, err := gorgonia.Grad(loss, g.Learnables()...)
				require.NoError(t, err)
				nodes := append(slices.Clone(outs), loss)
				var names []string
				for i, q := range g.Params() {
					names = append(names, q.Name)
					nodes = append(nodes, dl[i])
				}
				vals := make([]gorgonia.Value, len(nodes))
				for i := range nodes {
					gorgonia.Read(nodes[i], &vals[i])
				}
				vm := gorgonia.NewTapeMachine(g.ExprGraph)
				defer vm.Close()
				require.NoError(t, vm.RunAll())
				worst := map[string]float64{}
				for i, k := range append(slices.Clone(keys), "loss") {
					want, got := gold.floats(k), asFloat64s(vals[i])
					require.Len(t, got, len(want), k)
					for j := range want {
						require.InDelta(t, want[j], got[j], c.out*max(1, abs(want[j])), "%s[%d]", k, j)
						worst["out"] = max(worst["out"], abs(want[j]-got[j]))
					}
				}
				var gradNames []string
				for _, n := range f.Names() {
					if s, ok := strings.CutPrefix(n, "grad."); ok {
						gradNames = append(gradNames, s)
					}
				}
				sort.Strings(gradNames)
				sorted := slices.Clone(names)
				sort.Strings(sorted)
				require.Equal(t, gradNames, sorted, "every parameter has its reference gradient")
				for i, n := range names {
					want, got := gold.floats("grad."+n), asFloat64s(vals[len(keys)+1+i])
					require.Len(t, got, len(want), n)
					for j := range want {
						require.InDelta(t, want[j], got[j], c.grad, "grad %s[%d]", n, j)
						worst["grad"] = max(worst["grad"], abs(want[j]-got[j]))
					}
				}
				t.Logf("largest differences %v", worst)
			})
		}
	}
}

// What zoo saves from each head has exactly the keys and shapes of the
// reference's save_pretrained (so transformers' RobertaFor… loads it
// strictly), config.json names the class, and it loads back strictly.
func TestRobertaSaveKeys(t *testing.T) {
	for _, head := range []string{"mlm", "seq", "token", "qa"} {
		t.Run(head, func(t *testing.T) {
			dir := filepath.Join("testdata", "roberta", head)
			m, save, _, _, _ := robertaHead(t, head, tensor.Float32, true)
			out := requireSavedAs(t, dir, save)
			want, got := requireConfigAs(t, dir, out, "roberta")
			for _, k := range []string{"bos_token_id", "eos_token_id", "pad_token_id", "type_vocab_size", "max_position_embeddings"} {
				require.EqualValues(t, want[k], got[k], k)
			}
			back, _, _, _, _ := robertaHead(t, head, tensor.Float32, true)
			require.Equal(t, m.Config.NumParams(), back.Config.NumParams())
		})
	}
}

// RobertaLMHead applies gelu whatever hidden_act is: with an encoder of
// hidden_act relu (testdata/roberta_relu, roberta_reference.py
// --hidden-act relu, whose script checks that the head's taking relu
// moves the logits by more than 0.05), every head matches transformers.
func TestRobertaReluParity(t *testing.T) {
	variantParity(t, "roberta_relu", func(t *testing.T, m *Model) {
		require.Equal(t, "relu", m.Config.HiddenAct)
		require.Equal(t, RobertaModelType, m.Config.ModelType)
	})
}
