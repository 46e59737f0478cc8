package bert

// Parity with PyTorch ElectraForPreTraining, ElectraForMaskedLM,
// ElectraForSequenceClassification, ElectraForTokenClassification and
// ElectraForQuestionAnswering written with transformers' module names
// (tools/pytorch/electra_reference.py, which made testdata/electra/<head>
// with embedding_size 8 ≠ hidden_size 16: config.json and
// model.safetensors as save_pretrained lays them out, and
// golden.safetensors with a padded batch, the logits, a loss sum(logits·r)
// and the gradient of every parameter, in float64). The script checks
// that an unmasked attention, skipping embeddings_project, or tanh for the
// classifier's GELU, moves the logits by more than 0.05.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

func TestElectraParity(t *testing.T) {
	variantParity(t, "electra", func(t *testing.T, m *Model) {
		require.Nil(t, m.Pooler, "ELECTRA has no pooler")
		require.NotNil(t, m.EmbeddingsProject)
		require.Equal(t, "electra.embeddings_project.weight", m.EmbeddingsProject.Weight.Name)
		require.Equal(t, ElectraModelType, m.Config.ModelType)
		require.Equal(t, 8, m.Config.EmbeddingSize)
		require.Equal(t, []int{24, 8}, []int(m.WordEmbeddings.Weight.Value.Shape()))
	}, "pre")
}

// The discriminator's loss is transformers' BCEWithLogitsLoss over the
// attention mask: its value and its gradient with respect to the logits.
func TestElectraDiscriminatorLoss(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join("testdata", "electra", "pre", "golden.safetensors"))
	require.NoError(t, err)
	gold := golden{t, f}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		s, err := layers.NewStore(layers.WithDtype(dt))
		require.NoError(t, err)
		g := s.NewGraph()
		x := g.Input("logits", 2, 8)
		setFloats(t, g, x, gold.floats("logits"))
		labels := gold.ints("labels")
		for i, m := range gold.ints("attention_mask") {
			if m == 0 {
				labels[i] = layers.IgnoreIndex
			}
		}
		y := g.IntInput("labels", 2, 8)
		setInts(t, y, labels)
		loss, err := BinaryCrossEntropy(g, x, y)
		require.NoError(t, err)
		grads, err := gorgonia.Grad(loss, x)
		require.NoError(t, err)
		one, err := gorgonia.Reshape(loss, []int{1})
		require.NoError(t, err)
		vals, err := g.Evaluate(one, grads[0])
		require.NoError(t, err)
		require.InDelta(t, gold.floats("bce")[0], vals[0][0], 1e-6)
		want := gold.floats("grad_bce.logits")
		for i := range want {
			require.InDelta(t, want[i], vals[1][i], 1e-6, "grad[%d]", i)
		}
	}
	s, err := layers.NewStore()
	require.NoError(t, err)
	g := s.NewGraph()
	_, err = BinaryCrossEntropy(g, g.Input("x", 2, 8), g.IntInput("y", 2, 7))
	require.ErrorContains(t, err, "logits (2, 8) and labels (2, 7) must both be (B, T)")
}

// What zoo saves from each ELECTRA head has exactly the keys and shapes of
// the reference's save_pretrained, config.json names the class under
// ElectraConfig's keys (embedding_size included), and it loads back
// strictly.
func TestElectraSaveKeys(t *testing.T) {
	for _, head := range []string{"pre", "mlm", "seq", "token", "qa"} {
		t.Run(head, func(t *testing.T) {
			dir := filepath.Join("testdata", "electra", head)
			m, save, _, _, _ := variantHead(t, "electra", head, tensor.Float32, true)
			out := requireSavedAs(t, dir, save)
			want, got := requireConfigAs(t, dir, out, "electra")
			requireConfigKeys(t, want, got)
			back, _, _, _, _ := variantHead(t, "electra", head, tensor.Float32, true)
			require.Equal(t, m.NumParams(), back.NumParams())
			require.EqualValues(t, m.Config.NumParams(), back.Config.NumParams())
		})
	}
}

// electraHub is google/electra-small-discriminator's config.json as the
// Hub has it.
const electraHub = `{"architectures": ["ElectraForPreTraining"], "attention_probs_dropout_prob": 0.1, "embedding_size": 128,
	"hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 256, "initializer_range": 0.02, "intermediate_size": 1024,
	"layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "electra", "num_attention_heads": 4,
	"num_hidden_layers": 12, "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": 30522}`

func TestElectraConfig(t *testing.T) {
	c := ElectraSmall()
	require.NoError(t, c.Validate())
	require.EqualValues(t, 13483008, c.NumParams(), "electra-small-discriminator's ElectraModel")
	small := sizedElectra(30, 12)
	m, err := New(small, layers.WithSeed(1))
	require.NoError(t, err)
	require.EqualValues(t, m.Config.NumParams(), m.NumParams(), "NumParams counts what New allocates")
	same := small
	same.EmbeddingSize = small.HiddenSize
	m, err = New(same, layers.WithSeed(1))
	require.NoError(t, err)
	require.Nil(t, m.EmbeddingsProject, "no embeddings_project when embedding_size is hidden_size")
	require.EqualValues(t, m.Config.NumParams(), m.NumParams())
	require.NoError(t, ElectraSmallGenerator().Validate())

	var hub Config
	require.NoError(t, json.Unmarshal([]byte(electraHub), &hub))
	want := ElectraSmall()
	want.Extra = hub.Extra
	require.Equal(t, want, hub)
	require.Empty(t, hub.Extra)

	b, err := json.Marshal(hub)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, "electra", raw["model_type"])
	require.EqualValues(t, 128, raw["embedding_size"])
	require.Equal(t, "first", raw["summary_type"], "ElectraConfig's summary_* are written")
	var back Config
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, hub, back)

	var s Config
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "electra", "embedding_size": 32, "hidden_size": 64}`), Strict(&s)))
	require.Equal(t, 32, s.EmbeddingSize)
	require.Equal(t, ElectraModelType, s.ModelType)

	for _, bad := range []struct{ json, want string }{
		{`{"model_type": "electra", "embedding_size": -1}`, "embedding_size"},
		{`{"model_type": "electra", "is_decoder": true}`, "is_decoder"},
		{`{"model_type": "electra", "hidden_size": 30}`, "electra config: hidden_size 30 is not divisible by num_attention_heads 4"},
		{`{"model_type": "electra", "hidden_act": "swishy"}`, "electra config: hidden_act"},
	} {
		var c Config
		err := json.Unmarshal([]byte(bad.json), &c)
		if err == nil {
			err = c.Validate()
		}
		require.ErrorContains(t, err, bad.want, bad.json)
	}
	b2 := Tiny()
	b2.EmbeddingSize = 64
	require.ErrorContains(t, b2.Validate(), `embedding_size 64: only an ALBERT or an ELECTRA (model_type "albert", "electra") has an embedding_size of its own`)
	_, err = NewElectraForPreTraining(Tiny())
	require.ErrorContains(t, err, "has no replaced-token-detection head")
	_, err = NewForPreTraining(small)
	require.ErrorContains(t, err, "its ElectraForPreTraining is the replaced-token discriminator: use NewElectraForPreTraining")
}

// sizedElectra is a 2-layer ELECTRA 32 wide with embeddings 16 wide for a
// vocabulary of v and p positions, without dropout.
func sizedElectra(v, p int) Config {
	c := ElectraSmall()
	c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize, c.EmbeddingSize = 2, 32, 2, 64, 16
	c.VocabSize, c.MaxPositionEmbeddings = v, p
	c.HiddenDropoutProb, c.AttentionProbsDropoutProb = 0, 0
	c.InitializerRange = 0.3
	return c
}

func electraCheckpoints(t *testing.T) (map[string]string, *datasets.WordPiece) {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(), predictTexts, datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := sizedElectra(tok.VocabSize(), 24)
	dirs := saveHeads(t, cfg, tok)
	pre, err := NewElectraForPreTraining(cfg, layers.WithSeed(6))
	require.NoError(t, err)
	dirs["pre"] = t.TempDir()
	require.NoError(t, models.SaveText(dirs["pre"], pre, tok))
	return dirs, tok
}

// The pipelines run on ELECTRA checkpoints: text classification through
// ElectraClassificationHead, fill-mask through the generator's head at
// embedding_size, tokens, QA and features.
func TestElectraPipelines(t *testing.T) {
	dirs, tok := electraCheckpoints(t)
	p, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	require.Equal(t, "classifier.dense.weight", p.Model.Dense.Weight.Name)
	require.Equal(t, "classifier.out_proj.weight", p.Model.Classifier.Weight.Name)
	p.BatchSize = len(predictTexts)
	got, err := p.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	ids := encodeAll(t, tok, predictTexts)
	checkClassScores(t, p, got, ids, nil)

	fm, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	require.Empty(t, fm.Report.Created)
	require.Equal(t, "generator_predictions.dense.weight", fm.Model.MLM.Transform.Weight.Name)
	require.Equal(t, "generator_lm_head.bias", fm.Model.MLM.Bias.Name)
	texts := []string{"the [MASK] sat on the mat", "a dog [MASK] in the [MASK]"}
	fm.BatchSize, fm.TopK = len(texts), 3
	fills, err := fm.Predict(context.Background(), texts)
	require.NoError(t, err)
	want, err := FillMaskBatch(fm.Model, tok, texts, 3)
	require.NoError(t, err)
	require.Equal(t, want, fills)

	tp, err := LoadTokenClassification(dirs["tokens"])
	require.NoError(t, err)
	tp.IgnoreLabels = []string{}
	tags, err := tp.PredictTokens(context.Background(), predictTexts)
	require.NoError(t, err)
	checkTags(t, tp, tok, predictTexts, tags, nil)

	qp, err := LoadQuestionAnswering(dirs["qa"])
	require.NoError(t, err)
	qin := []QAInput{{Question: "where did the dog run", Context: "a dog ran in the park"}}
	ans, err := qp.PredictAll(context.Background(), qin)
	require.NoError(t, err)
	require.NotEmpty(t, ans[0])

	fp, err := LoadFeatureExtraction(dirs["pre"])
	require.NoError(t, err)
	feats, err := fp.Predict(context.Background(), predictTexts[:1])
	require.NoError(t, err)
	require.Nil(t, feats[0].Pooled, "ElectraModel has no pooler")
	require.Len(t, feats[0].Hidden[0], 32, "hidden_size, after embeddings_project")
}

// A discriminator checkpoint (ElectraForPreTraining) is what fine-tuning
// starts from: it loads into every head with discriminator_predictions
// dropped, and strictly only into its own; the generator's head loads
// across likewise.
func TestElectraLoadAcrossHeads(t *testing.T) {
	dirs, _ := electraCheckpoints(t)
	disc := []string{"discriminator_predictions.dense.bias", "discriminator_predictions.dense.weight",
		"discriminator_predictions.dense_prediction.bias", "discriminator_predictions.dense_prediction.weight"}
	c, r, err := LoadForSequenceClassification(dirs["pre"], models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.Equal(t, disc, r.Dropped)
	require.Equal(t, []string{"classifier.dense.bias", "classifier.dense.weight", "classifier.out_proj.bias", "classifier.out_proj.weight"}, sorted(r.Created))
	require.NotNil(t, c.Dense)
	_, r, err = LoadForTokenClassification(dirs["pre"], models.WithLabels("O", "X"))
	require.NoError(t, err)
	require.Equal(t, disc, r.Dropped)
	_, r, err = LoadForQuestionAnswering(dirs["pre"])
	require.NoError(t, err)
	require.Equal(t, disc, r.Dropped)
	_, r, err = LoadForMaskedLM(dirs["pre"])
	require.NoError(t, err)
	require.Equal(t, disc, r.Dropped)
	require.Equal(t, []string{"generator_lm_head.bias", "generator_predictions.LayerNorm.bias", "generator_predictions.LayerNorm.weight",
		"generator_predictions.dense.bias", "generator_predictions.dense.weight"}, sorted(r.Created))
	p, r, err := LoadElectraForPreTraining(dirs["pre"], models.Strict())
	require.NoError(t, err)
	require.Empty(t, r.Dropped)
	require.Empty(t, r.Created)
	require.Equal(t, "ElectraForPreTraining", p.architecture())
	_, _, err = LoadElectraForPreTraining(dirs["mlm"], models.Strict())
	require.Error(t, err)
	_, r, err = LoadElectraForPreTraining(dirs["mlm"])
	require.NoError(t, err)
	require.Equal(t, disc, sorted(r.Created))
	_, _, err = LoadForSequenceClassification(dirs["pre"], models.WithLabels("a", "b"), models.Strict())
	require.Error(t, err)
}
