package bert

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// robertaTokenizer is datasets' RoBERTa-layout fixture: a byte-level BPE
// with <s> <pad> </s> <unk> <mask> and RobertaProcessing, whose ids
// datasets checks against npm tokenizers.
func robertaTokenizer(t *testing.T) Tokenizer {
	t.Helper()
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "..", "datasets", "testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	pt, ok := tok.(Tokenizer)
	require.True(t, ok, "%T", tok)
	return pt
}

// tinyRoberta is a small RoBERTa for the tokenizer: 24 tokens (26
// positions, from pad_token_id 1 + 1), one token type.
func tinyRoberta(tok Tokenizer) Config {
	cfg := RobertaBase()
	cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize = 2, 32, 2, 64
	cfg.VocabSize, cfg.MaxPositionEmbeddings = tok.VocabSize(), 26
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0, 0
	cfg.InitializerRange = 0.3
	return cfg
}

var robertaTexts = []string{"The light of the Sun", "Rays of light are refracted by the prism.", "colours", "The Rays which are refracted"}

func TestRobertaConfig(t *testing.T) {
	c := RobertaBase()
	require.NoError(t, c.Validate())
	require.EqualValues(t, 124645632, c.NumParams(), "roberta-base's RobertaModel")
	require.Equal(t, 512, c.MaxTokens())
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	require.Equal(t, "roberta", raw["model_type"])
	require.Equal(t, []any{"RobertaModel"}, raw["architectures"])
	require.EqualValues(t, 0, raw["bos_token_id"])
	require.EqualValues(t, 2, raw["eos_token_id"])
	require.EqualValues(t, 1, raw["pad_token_id"])
	var back Config
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, c, back)
	// RobertaConfig's defaults for what a config.json leaves out.
	var d Config
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "roberta"}`), &d))
	require.Equal(t, robertaDefaults(), d)
	require.Equal(t, 1, d.PadTokenID)
	require.Equal(t, 50265, d.VocabSize)

	// roberta-base's config.json as the Hub has it is RobertaBase, nothing
	// left in Extra (bos_token_id and eos_token_id are the inert defaults).
	var hub Config
	require.NoError(t, json.Unmarshal([]byte(`{"architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1,
		"bos_token_id": 0, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
		"initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-05, "max_position_embeddings": 514,
		"model_type": "roberta", "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 1,
		"type_vocab_size": 1, "vocab_size": 50265}`), &hub))
	require.Equal(t, RobertaBase(), hub)

	for _, bad := range []struct{ json, want string }{
		{`{"model_type": "roberta", "max_position_embeddings": 2}`, "max_position_embeddings 2 leaves no position after padding_idx"},
		{`{"model_type": "roberta", "is_decoder": true}`, "is_decoder"},
		{`{"model_type": "roberta", "add_cross_attention": true}`, "add_cross_attention"},
		{`{"model_type": "roberta", "position_embedding_type": "relative_key"}`, "position_embedding_type"},
		{`{"model_type": "roberta", "tie_word_embeddings": false}`, "tie_word_embeddings"},
		{`{"model_type": "roberta", "chunk_size_feed_forward": 64}`, "chunk_size_feed_forward"},
		{`{"model_type": "roberta", "pruned_heads": {"0": [1]}}`, "pruned_heads"},
		{`{"model_type": "xlnet"}`, `model_type "xlnet" is not bert, roberta, distilbert, albert or electra`},
	} {
		var c Config
		err := json.Unmarshal([]byte(bad.json), &c)
		if err == nil {
			err = c.Validate()
		}
		require.ErrorContains(t, err, bad.want, bad.json)
	}
}

// Bad input: a text past max_position_embeddings − padding_idx − 1, and
// token types given to a model with one.
func TestRobertaBadInput(t *testing.T) {
	cfg := tinyRoberta(robertaTokenizer(t))
	m, err := New(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	g := m.Store.NewGraph()
	_, err = m.Hidden(g, Inputs{IDs: g.IntInput("ids", 1, 25)})
	require.ErrorContains(t, err, "25 tokens exceed the 24 a RoBERTa takes (max_position_embeddings 26 − padding_idx 1 − 1")
	_, err = newBatch(cfg, [][]int{{0, 5, 2, 2, 7, 2}}, [][]int{{0, 0, 0, 1, 1, 1}})
	require.ErrorContains(t, err, "given to a model without token types (type_vocab_size 1")
	_, err = NewForPreTraining(cfg)
	require.ErrorContains(t, err, "RoBERTa has no next-sentence prediction head")
	_, _, err = LoadForPreTraining(filepath.Join("testdata", "roberta", "mlm"))
	require.ErrorContains(t, err, "use NewForMaskedLM")
	_, err = newBatch(cfg, [][]int{make([]int, 25)}, nil)
	require.ErrorContains(t, err, "at most 24 (max_position_embeddings − pad_token_id − 1)")
}

// robertaCheckpoints saves a tiny RoBERTa of every head with the
// tokenizer (saveHeads): "seq" (a sequence classifier), "mlm" (a masked
// LM) and the others.
func robertaCheckpoints(t *testing.T) (map[string]string, Tokenizer) {
	tok := robertaTokenizer(t)
	return saveHeads(t, tinyRoberta(tok), tok), tok
}

// The text-classification pipeline on a RoBERTa checkpoint: <s> A </s>
// and <s> A </s></s> B </s> as the tokenizer's RobertaProcessing gives
// them, RobertaClassificationHead's scores, truncation to 24 tokens.
func TestRobertaTextClassificationPipeline(t *testing.T) {
	dirs, tok := robertaCheckpoints(t)
	p, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	require.NotNil(t, p.Model.Dense)
	require.Nil(t, p.Model.Pooler)
	p.BatchSize = len(robertaTexts)
	got, err := p.Predict(context.Background(), robertaTexts)
	require.NoError(t, err)
	var ids, types [][]int
	for _, s := range robertaTexts {
		x, ty, err := tok.EncodeWithSpecials(s)
		require.NoError(t, err)
		require.Equal(t, 0, x[0])
		require.Equal(t, 2, x[len(x)-1])
		ids, types = append(ids, x), append(types, ty)
	}
	checkClassScores(t, p, got, ids, types)

	pairs := [][2]string{{robertaTexts[0], robertaTexts[2]}, {robertaTexts[2], robertaTexts[3]}}
	gotPairs, err := p.PredictPairs(context.Background(), pairs)
	require.NoError(t, err)
	ids, types = nil, nil
	for _, pr := range pairs {
		x, ty, err := tok.EncodePair(pr[0], pr[1])
		require.NoError(t, err)
		a, _ := tok.Encode(pr[0])
		require.Equal(t, []int{2, 2}, x[len(a)+1:len(a)+3], "<s> A </s></s> B </s>")
		ids, types = append(ids, x), append(types, ty)
	}
	checkClassScores(t, p, gotPairs, ids, types)

	// A long text is cut to the 24 tokens the model takes.
	long := strings.Repeat("The light of the Sun ", 10)
	x, err := tok.Encode(long)
	require.NoError(t, err)
	require.Greater(t, len(x), 22)
	gotLong, err := p.Predict(context.Background(), []string{long})
	require.NoError(t, err)
	checkClassScores(t, p, gotLong, [][]int{append(append([]int{0}, x[:22]...), 2)}, [][]int{make([]int, 24)})
}

// The fill-mask pipeline on a RoBERTa checkpoint fills <mask> (the
// tokenizer's lstrip token), as FillMaskBatch does on one graph, and
// decodes each sequence without <s> and </s>.
func TestRobertaFillMaskPipeline(t *testing.T) {
	dirs, tok := robertaCheckpoints(t)
	p, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	require.Empty(t, p.Report.Created)
	require.Nil(t, p.Model.Pooler, "RobertaForMaskedLM has no pooler")
	texts := []string{"The <mask> of the Sun", "Rays of <mask> are refracted by the <mask>."}
	p.TopK = 3
	got, err := p.Predict(context.Background(), texts)
	require.NoError(t, err)
	want, err := FillMaskBatch(p.Model, tok, texts, 3)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Len(t, got[1], 2)
	for i := range want {
		for j := range want[i] {
			for k := range want[i][j] {
				require.InDelta(t, want[i][j][k].Score, got[i][j][k].Score, 1e-6)
				require.Equal(t, want[i][j][k].TokenID, got[i][j][k].TokenID)
			}
		}
	}
	f := got[0][0][0]
	tokStr, err := tok.Decode([]int{f.TokenID})
	require.NoError(t, err)
	require.Equal(t, tokStr, f.Token)
	require.Equal(t, "The"+tokStr+" of the Sun", f.Sequence, "the mask's lstrip took the space; <s> and </s> skipped")
	require.NotContains(t, got[0][0][0].Sequence, "</s>")
	require.True(t, strings.HasPrefix(got[1][0][0].Sequence, "<s>Rays of"), "with two masks the special tokens stay, as transformers decodes them")
	require.Contains(t, got[1][0][0].Sequence, "<mask>", "with two masks the other one stays")

	_, err = p.Predict(context.Background(), []string{"no mask here", "a [MASK] is not RoBERTa's"})
	require.ErrorContains(t, err, "no <mask>")
}

// Feature extraction loads a RoBERTa backbone; its hidden states are the
// model's.
func TestRobertaFeatureExtraction(t *testing.T) {
	tok := robertaTokenizer(t)
	m, err := New(tinyRoberta(tok), layers.WithSeed(3))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, models.SaveText(dir, m, tok))
	p, err := LoadFeatureExtraction(dir)
	require.NoError(t, err)
	got, err := p.Predict(context.Background(), robertaTexts[:2])
	require.NoError(t, err)
	ids, _, err := tok.EncodeWithSpecials(robertaTexts[0])
	require.NoError(t, err)
	g := p.Model.Store.NewGraph()
	in := Inputs{IDs: g.IntInput("ids", 1, len(ids))}
	setInts(t, in.IDs, ids)
	h, err := p.Model.Hidden(g, in)
	require.NoError(t, err)
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	flat := asFloat64s(h.Value())
	require.Len(t, got[0].Hidden, len(ids))
	for i, row := range got[0].Hidden {
		for j, x := range row {
			require.InDelta(t, flat[i*len(row)+j], x, 1e-5)
		}
	}
	require.NotNil(t, got[0].Pooled, "RobertaModel has its pooler")
}

// A checkpoint as the Hub's roberta-base holds it loads into
// RobertaForMaskedLM strictly: the tied lm_head.decoder.weight (equal to
// the word embeddings) and lm_head.decoder.bias (lm_head.bias) are read,
// and roberta.pooler.*, which RobertaForMaskedLM lacks, is dropped and
// reported (transformers warns of the same two). A decoder that is not
// the word embeddings is refused. The checkpoint also fits a new
// sequence classifier, its lm_head dropped and the classification head
// created.
func TestRobertaLoadsHubLayout(t *testing.T) {
	src := filepath.Join("testdata", "roberta", "mlm")
	f, ts := readTensors(t, src)
	words, _ := f.Tensor("roberta.embeddings.word_embeddings.weight")
	bias, _ := f.Tensor("lm_head.bias")
	dense, _ := f.Tensor("lm_head.dense.weight")
	denseBias, _ := f.Tensor("lm_head.dense.bias")
	hub := append(slices.Clone(ts),
		safetensors.Tensor{Name: "lm_head.decoder.weight", DType: words.DType, Shape: words.Shape, Data: words.Data},
		safetensors.Tensor{Name: "lm_head.decoder.bias", DType: bias.DType, Shape: bias.Shape, Data: bias.Data},
		safetensors.Tensor{Name: "roberta.pooler.dense.weight", DType: dense.DType, Shape: dense.Shape, Data: dense.Data},
		safetensors.Tensor{Name: "roberta.pooler.dense.bias", DType: denseBias.DType, Shape: denseBias.Shape, Data: denseBias.Data})
	write := func(ts []safetensors.Tensor) string { return writeLayout(t, src, ts, "", "") }
	dir := write(hub)
	p, r, err := LoadForMaskedLM(dir, models.Strict())
	require.NoError(t, err)
	require.Equal(t, []string{"roberta.pooler.dense.bias", "roberta.pooler.dense.weight"}, r.Dropped)
	require.Empty(t, r.Created)
	require.Nil(t, p.Pooler)

	// An untied decoder is not RobertaForMaskedLM's.
	_, _, err = LoadForMaskedLM(write(untie(hub, "lm_head.decoder.weight")), models.Strict())
	require.ErrorContains(t, err, "lm_head.decoder.weight")

	c, r, err := LoadForSequenceClassification(dir, models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.Equal(t, []string{"classifier.dense.bias", "classifier.dense.weight", "classifier.out_proj.bias", "classifier.out_proj.weight"}, sorted(r.Created))
	require.Contains(t, r.Dropped, "lm_head.dense.weight")
	require.Contains(t, r.Dropped, "lm_head.decoder.weight")
	require.NotNil(t, c.Dense)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// RoBERTa's pipelines and graph-level calls give the same results alone
// and from several goroutines at once (run with -race).
func TestRobertaConcurrentInference(t *testing.T) {
	dirs, tok := robertaCheckpoints(t)
	fill, err := LoadFillMask(dirs["mlm"])
	require.NoError(t, err)
	clf, err := LoadTextClassification(dirs["seq"])
	require.NoError(t, err)
	ids, _, err := tok.EncodePair(robertaTexts[0], robertaTexts[2])
	require.NoError(t, err)
	m, err := New(tinyRoberta(tok), layers.WithSeed(7))
	require.NoError(t, err)
	tagger, err := NewForTokenClassification(m, []string{"O", "B-LOC", "I-LOC"})
	require.NoError(t, err)
	m, err = New(tinyRoberta(tok), layers.WithSeed(8))
	require.NoError(t, err)
	span, err := NewForQuestionAnswering(m)
	require.NoError(t, err)
	for name, w := range map[string]models.Weights{"tokens": tagger, "qa": span} {
		dirs[name] = t.TempDir()
		require.NoError(t, models.SaveText(dirs[name], w, tok))
	}
	tags, err := LoadTokenClassification(dirs["tokens"])
	require.NoError(t, err)
	qa, err := LoadQuestionAnswering(dirs["qa"])
	require.NoError(t, err)
	racetest.Check(t, 2,
		racetest.Call{Name: "TokenClassification", Run: func() (any, error) { return tags.Predict(context.Background(), robertaTexts) }},
		racetest.Call{Name: "QuestionAnswering", Run: func() (any, error) {
			return qa.Predict(context.Background(), []QAInput{{Question: "What is refracted?", Context: robertaTexts[1]}})
		}},
		racetest.Call{Name: "FillMaskPipeline", Run: func() (any, error) {
			return fill.Predict(context.Background(), []string{"The <mask> of the Sun", "Rays of <mask> are refracted"})
		}},
		racetest.Call{Name: "FillMaskBatch", Run: func() (any, error) { return FillMaskBatch(fill.Model, tok, []string{"The <mask> of the Sun"}, 0) }},
		racetest.Call{Name: "TextClassification", Run: func() (any, error) { return clf.Predict(context.Background(), robertaTexts) }},
		racetest.Call{Name: "HiddenStates", Run: func() (any, error) { return fill.Model.HiddenStates(ids, nil) }},
		racetest.Call{Name: "Attentions", Run: func() (any, error) { return clf.Model.Attentions(ids, nil) }},
	)
}

// The token-classification pipeline on a RoBERTa checkpoint: every token
// but <s> and </s> with its tag from the model's logits, the token as the
// tokenizer writes it ("Ġlight"), the byte offsets tokenizers gives it
// (trim_offsets), entities decoded through the byte-level decoder.
func TestRobertaTokenClassificationPipeline(t *testing.T) {
	tok := robertaTokenizer(t)
	m, err := New(tinyRoberta(tok), layers.WithSeed(4))
	require.NoError(t, err)
	c, err := NewForTokenClassification(m, []string{"O", "B-PER", "I-PER", "B-LOC", "I-LOC"})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, models.SaveText(dir, c, tok))
	p, err := LoadTokenClassification(dir)
	require.NoError(t, err)
	p.BatchSize, p.IgnoreLabels = len(robertaTexts), []string{}
	got, err := p.PredictTokens(context.Background(), robertaTexts)
	require.NoError(t, err)
	enc := tok.(interface {
		EncodeOffsets(string) ([]int, []datasets.WordSpan, error)
	})
	offs := make([][]datasets.WordSpan, len(robertaTexts))
	for i, s := range robertaTexts {
		var err error
		_, offs[i], err = enc.EncodeOffsets(s)
		require.NoError(t, err)
	}
	checkTags(t, p, tok, robertaTexts, got, func(i, j int, ids []int, x TaggedToken) {
		require.Equal(t, tok.Vocab()[ids[x.Index]], x.Word)
		require.Equal(t, offs[i][j], datasets.WordSpan{Start: x.Start, End: x.End})
	})
	// On ASCII text each token covers its own text, without the space
	// its "Ġ" stands for.
	for i, s := range robertaTexts {
		for _, x := range got[i] {
			require.Equal(t, strings.TrimPrefix(p.decodeTokens([]string{x.Word}), " "), s[x.Start:x.End], "%q %q", s, x.Word)
		}
	}
	ents, err := p.Predict(context.Background(), robertaTexts)
	require.NoError(t, err)
	for i := range robertaTexts {
		require.Equal(t, groupEntities(got[i], p.decodeTokens), ents[i])
	}
	require.Equal(t, " of the", p.decodeTokens([]string{"Ġof", "Ġthe"}))
	// Truncated to the 24 tokens the model takes, with <s> and </s>.
	toks, err := p.PredictTokens(context.Background(), []string{strings.Repeat("The light of the Sun ", 10)})
	require.NoError(t, err)
	require.Len(t, toks[0], 22)
}

// The question-answering pipeline on a RoBERTa checkpoint: windows
// <s> question </s></s> context </s> (type 0 throughout), the best span
// of every window scored from the logits as the pipeline scores it, cut
// from the context at its tokens' offsets.
func TestRobertaQuestionAnsweringPipeline(t *testing.T) {
	tok := robertaTokenizer(t)
	m, err := New(tinyRoberta(tok), layers.WithSeed(6))
	require.NoError(t, err)
	qa, err := NewForQuestionAnswering(m)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, models.SaveText(dir, qa, tok))
	p, err := LoadQuestionAnswering(dir)
	require.NoError(t, err)
	in := []QAInput{
		{Question: "What is refracted?", Context: "Rays of light are refracted by the prism."},
		{Question: "Which light?", Context: "The light of the Sun is refracted by the prism, and the Rays which are refracted make colours."},
	}
	p.MaxSeqLen, p.DocStride, p.TopK, p.MaxAnswerLen = 20, 3, 3, 4
	got, err := p.PredictAll(context.Background(), in)
	require.NoError(t, err)
	enc := tok.(interface {
		EncodeOffsets(string) ([]int, []datasets.WordSpan, error)
	})
	for i, x := range in {
		q, err := tok.Encode(x.Question)
		require.NoError(t, err)
		c, offs, err := enc.EncodeOffsets(x.Context)
		require.NoError(t, err)
		room := 20 - len(q) - 4
		wins, err := qaWindows(p.cls, p.sep, 2, 0, q, c, room, room-3)
		require.NoError(t, err)
		require.Equal(t, []int{2, 2}, wins[0].IDs[len(q)+1:len(q)+3], "<s> question </s></s> context </s>")
		if i == 1 {
			require.Greater(t, len(wins), 1, "a long context is windowed")
		}
		requireBestAnswer(t, p, wins, offs, x.Context, false, got[i], i)
	}
	p.MaxSeqLen = 30 // more than the 24 tokens the model takes
	_, err = p.Predict(context.Background(), in)
	require.ErrorContains(t, err, "MaxSeqLen 30 is more than the model's 24 positions (max_position_embeddings − pad_token_id − 1)")
}
