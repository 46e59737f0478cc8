package bert

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// distilHub is distilbert-base-uncased's config.json as the Hub has it.
const distilHub = `{"activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1, "dim": 768,
	"dropout": 0.1, "hidden_dim": 3072, "initializer_range": 0.02, "max_position_embeddings": 512, "model_type": "distilbert",
	"n_heads": 12, "n_layers": 6, "pad_token_id": 0, "qa_dropout": 0.1, "seq_classif_dropout": 0.2,
	"sinusoidal_pos_embds": false, "tie_weights_": true, "transformers_version": "4.10.0.dev0", "vocab_size": 30522}`

func TestDistilBertConfig(t *testing.T) {
	c := DistilBertBase()
	require.NoError(t, c.Validate())
	require.EqualValues(t, 66362880, c.NumParams(), "distilbert-base-uncased's DistilBertModel")
	m, err := New(sizedDistil(30, 16), layers.WithSeed(1))
	require.NoError(t, err)
	require.EqualValues(t, m.Config.NumParams(), m.NumParams(), "NumParams counts what New allocates")

	// distilbert-base-uncased's config.json is DistilBertBase; tie_weights_
	// (true) and transformers_version are kept.
	var hub Config
	require.NoError(t, json.Unmarshal([]byte(distilHub), &hub))
	want := DistilBertBase()
	want.Extra = hub.Extra
	require.Equal(t, want, hub)
	require.Equal(t, []string{"tie_weights_", "transformers_version"}, sorted(keysOf(hub.Extra)))
	require.Equal(t, 0, hub.TypeVocabSize)
	require.Equal(t, 0.2, hub.SeqClassifDropout)
	require.Equal(t, 0.1, hub.QADropout)

	// Written under DistilBertConfig's names, and read back equal.
	b, err := json.Marshal(hub)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	for _, k := range []string{"dim", "hidden_dim", "n_layers", "n_heads", "activation", "dropout", "attention_dropout", "qa_dropout", "seq_classif_dropout", "sinusoidal_pos_embds"} {
		require.Contains(t, raw, k)
	}
	for _, k := range []string{"hidden_size", "intermediate_size", "num_hidden_layers", "type_vocab_size", "layer_norm_eps", "hidden_act", "position_embedding_type"} {
		require.NotContains(t, raw, k)
	}
	require.Equal(t, "distilbert", raw["model_type"])
	var back Config
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, hub, back)

	// attribute_map's names read as aliases.
	var al Config
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "distilbert", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 3}`), &al))
	require.Equal(t, 64, al.HiddenSize)
	require.Equal(t, 4, al.NumAttentionHeads)
	require.Equal(t, 3, al.NumHiddenLayers)
	require.Empty(t, al.Extra)

	// A strict model section reads DistilBertConfig's names.
	var s Config
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "distilbert", "dim": 32, "n_heads": 2}`), Strict(&s)))
	require.Equal(t, 32, s.HiddenSize)
	require.Equal(t, DistilBertModelType, s.ModelType)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"model_type": "distilbert", "hidden_sise": 32}`), Strict(&s)), `unknown key "hidden_sise"`)

	for _, bad := range []struct{ json, want string }{
		{`{"model_type": "distilbert", "tie_weights_": false}`, "tie_weights_"},
		{`{"model_type": "distilbert", "is_decoder": true}`, "is_decoder"},
		{`{"model_type": "distilbert", "tie_word_embeddings": false}`, "tie_word_embeddings"},
		{`{"model_type": "distilbert", "dim": 30}`, "distilbert config: dim 30 is not divisible by n_heads 12"},
		{`{"model_type": "distilbert", "activation": "swishy"}`, "distilbert config: activation"},
		{`{"model_type": "distilbert", "seq_classif_dropout": 1.5}`, "seq_classif_dropout 1.5 must be in [0, 1)"},
		{`{"model_type": "distilbert", "qa_dropout": -0.1}`, "qa_dropout -0.1 must be in [0, 1)"},
		{`{"model_type": "distilbert", "n_layers": 0}`, "n_layers"},
		{`{"model_type": "distilbert", "dim": 64, "hidden_size": 32}`, "disagree"},
	} {
		var c Config
		err := json.Unmarshal([]byte(bad.json), &c)
		if err == nil {
			err = c.Validate()
		}
		require.ErrorContains(t, err, bad.want, bad.json)
	}
	// sinusoidal_pos_embds true is implemented (distilbert_sinusoidal.go):
	// read, validated and written back; no other model type takes it.
	var sin Config
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "distilbert", "sinusoidal_pos_embds": true}`), &sin))
	require.True(t, sin.SinusoidalPosEmbds)
	require.NoError(t, sin.Validate())
	out, err := json.Marshal(sin)
	require.NoError(t, err)
	require.Contains(t, string(out), `"sinusoidal_pos_embds":true`)
	rb := RobertaBase()
	rb.SinusoidalPosEmbds = true
	require.ErrorContains(t, rb.Validate(), "roberta config: sinusoidal position embeddings are DistilBERT's (sinusoidal_pos_embds); a RoBERTa has learned positions")
	tv := DistilBertBase()
	tv.TypeVocabSize = 2
	require.ErrorContains(t, tv.Validate(), "type_vocab_size 2: a DistilBERT has no token types")
}

func keysOf(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// sizedDistil is a 2-layer DistilBERT 32 wide for a vocabulary of v and p
// positions, without dropout.
func sizedDistil(v, p int) Config {
	c := DistilBertBase()
	c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize = 2, 32, 2, 64
	c.VocabSize, c.MaxPositionEmbeddings = v, p
	c.HiddenDropoutProb, c.AttentionProbsDropoutProb, c.QADropout, c.SeqClassifDropout = 0, 0, 0, 0
	c.InitializerRange = 0.3
	return c
}

// Bad input: token types given to a DistilBERT, next-sentence prediction,
// a text past max_position_embeddings.
func TestDistilBertBadInput(t *testing.T) {
	cfg := sizedDistil(30, 12)
	m, err := New(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	require.Nil(t, m.TokenTypeEmbeddings)
	require.Nil(t, m.Pooler)
	g := m.Store.NewGraph()
	_, err = m.Hidden(g, Inputs{IDs: g.IntInput("ids", 1, 4), TokenTypes: g.IntInput("types", 1, 4)})
	require.ErrorContains(t, err, "token type ids given to a DistilBERT, which has no token types")
	_, err = m.HiddenStates([]int{1, 5, 3, 6, 3}, []int{0, 0, 0, 1, 1})
	require.ErrorContains(t, err, "token type 1 at position 3 given to a DistilBERT, which has no token types")
	_, err = m.HiddenStates([]int{1, 5, 3}, []int{0, 0, 0})
	require.NoError(t, err, "all-zero types are no types")
	_, err = m.Pooled(g, Inputs{IDs: g.IntInput("ids2", 1, 4)})
	require.ErrorContains(t, err, "has none")
	_, err = NewForPreTraining(cfg)
	require.ErrorContains(t, err, "DistilBERT has no next-sentence prediction head (transformers has no DistilBertForPreTraining)")
	_, err = newBatch(cfg, [][]int{make([]int, 13)}, nil)
	require.ErrorContains(t, err, "at most 12 (max_position_embeddings)")
	_, err = m.Hidden(g, Inputs{IDs: g.IntInput("ids3", 1, 13)})
	require.ErrorContains(t, err, "13 tokens exceed the 12 positions")
}

// distilCheckpoints saves a tiny DistilBERT of every head with a WordPiece
// tokenizer trained on predictTexts: "seq", "tokens", "qa", "mlm", "base".
func distilCheckpoints(t *testing.T) (map[string]string, *datasets.WordPiece) {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(), predictTexts, datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := sizedDistil(tok.VocabSize(), 24)
	return saveHeads(t, cfg, tok), tok
}

// The text-classification pipeline on a DistilBERT checkpoint:
// pre_classifier → ReLU → classifier on [CLS], pairs [CLS] A [SEP] B [SEP]
// whose segments the model does not read, truncation to 24 tokens.
func TestDistilBertTextClassificationPipeline(t *testing.T) {
	dirs, tok := distilCheckpoints(t)
	p, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	require.NotNil(t, p.Model.Dense)
	require.Equal(t, "pre_classifier.weight", p.Model.Dense.Weight.Name)
	require.Equal(t, "classifier.weight", p.Model.Classifier.Weight.Name)
	p.BatchSize = len(predictTexts)
	got, err := p.Predict(context.Background(), predictTexts)
	require.NoError(t, err)
	ids := encodeAll(t, tok, predictTexts)
	checkClassScores(t, p, got, ids, nil)

	pairs := [][2]string{{predictTexts[0], predictTexts[2]}, {predictTexts[2], predictTexts[3]}}
	gotPairs, err := p.PredictPairs(context.Background(), pairs)
	require.NoError(t, err)
	ids = nil
	for _, pr := range pairs {
		x, _, err := tok.EncodePair(pr[0], pr[1])
		require.NoError(t, err)
		ids = append(ids, x)
	}
	checkClassScores(t, p, gotPairs, ids, nil)

	long := strings.Repeat("the cat sat on the mat ", 10)
	x, err := tok.Encode(long)
	require.NoError(t, err)
	gotLong, err := p.Predict(context.Background(), []string{long})
	require.NoError(t, err)
	cls, sep := ids[0][0], ids[0][len(ids[0])-1]
	checkClassScores(t, p, gotLong, [][]int{append(append([]int{cls}, x[:22]...), sep)}, nil)
}

// The fill-mask pipeline on a DistilBERT checkpoint fills [MASK] as
// FillMaskBatch does, through vocab_transform, vocab_layer_norm and the
// tied vocab_projector.
func TestDistilBertFillMaskPipeline(t *testing.T) {
	dirs, tok := distilCheckpoints(t)
	p, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	require.Empty(t, p.Report.Created)
	require.Empty(t, p.Report.Dropped)
	require.Equal(t, "vocab_transform.weight", p.Model.MLM.Transform.Weight.Name)
	require.Equal(t, "vocab_projector.bias", p.Model.MLM.Bias.Name)
	texts := []string{"the [MASK] sat on the mat", "a dog [MASK] in the [MASK]", "my bird sang at [MASK]"}
	p.BatchSize, p.TopK = len(texts), 3
	got, err := p.Predict(context.Background(), texts)
	require.NoError(t, err)
	want, err := FillMaskBatch(p.Model, tok, texts, 3)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Len(t, got[1], 2)
	require.NotContains(t, got[0][0][0].Sequence, "[CLS]")
	_, err = LoadFillMask(dirs["seq"])
	require.ErrorContains(t, err, "no trained masked-LM head")
}

// Token classification, question answering and feature extraction run on
// DistilBERT checkpoints: the tags are the argmax of the logits of the
// ids alone, the answers cut from the context, and the features have no
// pooled output.
func TestDistilBertOtherPipelines(t *testing.T) {
	dirs, tok := distilCheckpoints(t)
	tp, err := LoadTokenClassification(dirs["tokens"])
	require.NoError(t, err)
	tp.IgnoreLabels = []string{}
	got, err := tp.PredictTokens(context.Background(), predictTexts)
	require.NoError(t, err)
	ids, in := checkTags(t, tp, tok, predictTexts, got, nil)
	require.Nil(t, in.TokenTypes)

	qp, err := LoadQuestionAnswering(dirs["qa"])
	require.NoError(t, err)
	qin := []QAInput{{Question: "where did the dog run", Context: "a dog ran in the park"}}
	ans, err := qp.PredictAll(context.Background(), qin)
	require.NoError(t, err)
	require.NotEmpty(t, ans[0])
	for _, a := range ans[0] {
		require.Equal(t, qin[0].Context[a.Start:a.End], a.Answer)
	}

	fp, err := LoadFeatureExtraction(dirs["base"])
	require.NoError(t, err)
	feats, err := fp.Predict(context.Background(), predictTexts[:1])
	require.NoError(t, err)
	require.Nil(t, feats[0].Pooled, "DistilBertModel has no pooler")
	hs, err := fp.Model.HiddenStates(ids[0], nil)
	require.NoError(t, err)
	last := hs[len(hs)-1]
	require.Len(t, feats[0].Hidden, len(last))
	for i := range last {
		for j := range last[i] {
			require.InDelta(t, last[i][j], feats[0].Hidden[i][j], 1e-5)
		}
	}
}

// A checkpoint of one DistilBERT head fits another: the masked LM's
// vocab_* dropped, a new classifier's pre_classifier and classifier
// created; strict loading across heads fails.
func TestDistilBertLoadAcrossHeads(t *testing.T) {
	dirs, _ := distilCheckpoints(t)
	c, r, err := LoadForSequenceClassification(dirs["mlm"], models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.Equal(t, []string{"vocab_layer_norm.bias", "vocab_layer_norm.weight", "vocab_projector.bias", "vocab_transform.bias", "vocab_transform.weight"}, r.Dropped)
	require.Equal(t, []string{"classifier.bias", "classifier.weight", "pre_classifier.bias", "pre_classifier.weight"}, sorted(r.Created))
	require.NotNil(t, c.Dense)
	// A classifier fine-tuned anew from a classifier checkpoint drops both
	// of its linears.
	_, r, err = LoadForSequenceClassification(dirs["seq"], models.WithLabels("x", "y"))
	require.NoError(t, err)
	require.Equal(t, []string{"classifier.bias", "classifier.weight", "pre_classifier.bias", "pre_classifier.weight"}, r.Dropped)
	_, _, err = LoadForSequenceClassification(dirs["mlm"], models.WithLabels("a", "b"), models.Strict())
	require.Error(t, err)
	_, _, err = LoadForTokenClassification(dirs["seq"])
	require.ErrorContains(t, err, "DistilBertForSequenceClassification checkpoint")
	_, _, err = Load(filepath.Join("testdata", "distilbert", "qa"))
	require.NoError(t, err)
}

// Each head's dropout is DistilBertConfig's: seq_classif_dropout after
// pre_classifier's ReLU, qa_dropout before qa_outputs, dropout before the
// token classifier.
func TestDistilBertDropouts(t *testing.T) {
	cfg := sizedDistil(30, 12)
	cfg.HiddenDropoutProb, cfg.QADropout, cfg.SeqClassifDropout = 0.1, 0.3, 0.25
	for _, c := range []struct {
		name string
		p    func(*Model) (float64, error)
		want float64
	}{
		{"seq_classif_dropout", func(m *Model) (float64, error) {
			c, err := NewForSequenceClassification(m, []string{"a", "b"})
			return c.drop.P, err
		}, 0.25},
		{"qa_dropout", func(m *Model) (float64, error) { q, err := NewForQuestionAnswering(m); return q.drop.P, err }, 0.3},
		{"dropout", func(m *Model) (float64, error) {
			c, err := NewForTokenClassification(m, []string{"a", "b"})
			return c.drop.P, err
		}, 0.1},
	} {
		m, err := New(cfg, layers.WithSeed(1))
		require.NoError(t, err)
		p, err := c.p(m)
		require.NoError(t, err)
		require.Equal(t, c.want, p, c.name)
	}
	// BERT's QA head has no dropout, as BertForQuestionAnswering.
	m, err := New(sized(1, 16, 2, 32), layers.WithSeed(1))
	require.NoError(t, err)
	q, err := NewForQuestionAnswering(m)
	require.NoError(t, err)
	require.Zero(t, q.drop.P)
}

// DistilBERT's pipelines and graph-level calls give the same results alone
// and from several goroutines at once (run with -race).
func TestDistilBertConcurrentInference(t *testing.T) {
	dirs, tok := distilCheckpoints(t)
	fill, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	clf, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	tags, err := LoadTokenClassification(dirs["tokens"])
	require.NoError(t, err)
	qa, err := LoadQuestionAnswering(dirs["qa"])
	require.NoError(t, err)
	ids, _, err := tok.EncodeWithSpecials(predictTexts[0])
	require.NoError(t, err)
	racetest.Check(t, 2,
		racetest.Call{Name: "TokenClassification", Run: func() (any, error) { return tags.Predict(context.Background(), predictTexts) }},
		racetest.Call{Name: "QuestionAnswering", Run: func() (any, error) {
			return qa.Predict(context.Background(), []QAInput{{Question: "where did the dog run", Context: predictTexts[1]}})
		}},
		racetest.Call{Name: "FillMaskPipeline", Run: func() (any, error) {
			return fill.Predict(context.Background(), []string{"the [MASK] sat on the mat", "a dog [MASK] in the park"})
		}},
		racetest.Call{Name: "TextClassification", Run: func() (any, error) { return clf.Predict(context.Background(), predictTexts) }},
		racetest.Call{Name: "HiddenStates", Run: func() (any, error) { return fill.Model.HiddenStates(ids, nil) }},
		racetest.Call{Name: "Attentions", Run: func() (any, error) { return clf.Model.Attentions(ids, nil) }},
	)
}

// Checkpoints as transformers may write them load: a DistilBertForMaskedLM
// file with the tied vocab_projector.weight (equal to the word
// embeddings; an untied one is refused) and the position_ids buffer, and a
// bare DistilBertModel file (embeddings.*, transformer.*, no prefix).
func TestDistilBertLoadsHubLayout(t *testing.T) {
	src := filepath.Join("testdata", "distilbert", "mlm")
	f, ts := readTensors(t, src)
	words, _ := f.Tensor("distilbert.embeddings.word_embeddings.weight")
	hub := append(slices.Clone(ts),
		safetensors.Tensor{Name: "vocab_projector.weight", DType: words.DType, Shape: words.Shape, Data: words.Data},
		safetensors.Tensor{Name: "distilbert.embeddings.position_ids", DType: "I64", Shape: []int{1, 12}, Data: make([]byte, 8*12)})
	write := func(ts []safetensors.Tensor, config string) string {
		return writeLayout(t, src, ts, "DistilBertForMaskedLM", config)
	}
	_, r, err := LoadForMaskedLM(write(hub, ""), models.Strict())
	require.NoError(t, err)
	require.Empty(t, r.Created)
	require.Empty(t, r.Dropped)

	_, _, err = LoadForMaskedLM(write(untie(hub, "vocab_projector.weight"), ""), models.Strict())
	require.ErrorContains(t, err, "vocab_projector.weight")

	var bare []safetensors.Tensor
	for _, x := range ts {
		if n, ok := strings.CutPrefix(x.Name, "distilbert."); ok {
			x.Name = n
			bare = append(bare, x)
		}
	}
	m, r, err := Load(write(bare, "DistilBertModel"), models.Strict())
	require.NoError(t, err)
	require.Empty(t, r.Created)
	require.Empty(t, r.Dropped)
	out := t.TempDir()
	require.NoError(t, m.Save(out))
	ck, err := models.Open(out)
	require.NoError(t, err)
	require.Equal(t, []string{"DistilBertModel"}, ck.Architectures)
}
