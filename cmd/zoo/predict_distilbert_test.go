package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// distilHeads writes a tiny untrained DistilBERT checkpoint of each head
// zoo predict reads, with a WordPiece tokenizer, by architecture.
func distilHeads(t *testing.T) map[string]string {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(),
		[]string{"the cat sat on the mat", "a dog ran in the park", "paris is in france"},
		datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := bert.DistilBertBase()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 16, 32, 2, 1
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 32, tok.VocabSize()
	dir := t.TempDir()
	out := map[string]string{}
	for _, arch := range []string{"DistilBertModel", "DistilBertForSequenceClassification", "DistilBertForMaskedLM", "DistilBertForTokenClassification", "DistilBertForQuestionAnswering"} {
		m, err := bert.New(cfg, layers.WithSeed(3))
		require.NoError(t, err)
		var w models.Weights = m
		switch arch {
		case "DistilBertForSequenceClassification":
			w, err = bert.NewForSequenceClassification(m, []string{"negative", "positive"})
		case "DistilBertForMaskedLM":
			w, err = bert.NewForMaskedLM(cfg, layers.WithSeed(3))
		case "DistilBertForTokenClassification":
			w, err = bert.NewForTokenClassification(m, []string{"O", "B-LOC", "I-LOC"})
		case "DistilBertForQuestionAnswering":
			w, err = bert.NewForQuestionAnswering(m)
		}
		require.NoError(t, err)
		out[arch] = filepath.Join(dir, arch)
		require.NoError(t, models.SaveText(out[arch], w, tok))
		ck, err := models.Open(out[arch])
		require.NoError(t, err)
		require.Equal(t, []string{arch}, ck.Architectures)
		require.Equal(t, "distilbert", ck.ModelType)
	}
	return out
}

// distilPredictCases are zoo predict on DistilBERT checkpoints, each
// against the library's one-call pipeline.
func distilPredictCases(t *testing.T) []predictCase {
	ctx := context.Background()
	r := distilHeads(t)
	texts := []string{"the cat sat on the mat", "paris is in france"}
	return []predictCase{
		{head: "DistilBertForSequenceClassification", dir: r["DistilBertForSequenceClassification"], task: "text-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTextClassification(r["DistilBertForSequenceClassification"])
				require.NoError(t, err)
				p.TopK = 1
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: labelsPlain},
		{head: "DistilBertForMaskedLM", dir: r["DistilBertForMaskedLM"], task: "fill-mask", inputs: []string{"the [MASK] sat on the mat", "a [MASK] ran in the [MASK]"},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFillMask(r["DistilBertForMaskedLM"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				got := make([]any, len(out))
				for i, fills := range out {
					got[i] = fills
					if len(fills) == 1 {
						got[i] = fills[0]
					}
				}
				return got
			}, plain: func(v any) []string {
				fills, ok := v.([]bert.Fill)
				if !ok {
					fills = v.([][]bert.Fill)[1]
				}
				return []string{fmt.Sprintf("%.4f", fills[0].Score), fills[0].Sequence}
			}},
		{head: "DistilBertForTokenClassification", dir: r["DistilBertForTokenClassification"], task: "token-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTokenClassification(r["DistilBertForTokenClassification"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				got := anys(out)
				for i, es := range out {
					if es == nil {
						got[i] = []models.Entity{}
					}
				}
				return got
			}, plain: func(v any) []string {
				var out []string
				for _, e := range v.([]models.Entity) {
					out = append(out, fmt.Sprintf("%s  %s  %.4f  bytes %d–%d", e.Group, strings.TrimSpace(e.Word), e.Score, e.Start, e.End))
				}
				if len(out) == 0 {
					out = []string{"(no entities)"}
				}
				return out
			}},
		{head: "DistilBertForQuestionAnswering", dir: r["DistilBertForQuestionAnswering"], task: "question-answering",
			inputs: texts, flags: []string{"--question", "where is it?"},
			jsonl: []string{`{"question": "where is it?", "context": "the cat sat on the mat"}`, `{"question": "where is it?", "context": "paris is in france"}`},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadQuestionAnswering(r["DistilBertForQuestionAnswering"])
				require.NoError(t, err)
				qs := make([]bert.QAInput, len(in))
				for i, c := range in {
					qs[i] = bert.QAInput{Question: "where is it?", Context: c}
				}
				out, err := p.Predict(ctx, qs)
				require.NoError(t, err)
				return anys(out)
			}, plain: func(v any) []string {
				a := v.(models.Answer)
				return []string{"where is it?", fmt.Sprintf("%q  %.4f  bytes %d–%d of the context", a.Answer, a.Score, a.Start, a.End)}
			}},
		{head: "DistilBertModel", dir: r["DistilBertModel"], task: "feature-extraction", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFeatureExtraction(r["DistilBertModel"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				require.Nil(t, out[0].Pooled, "DistilBertModel has no pooler")
				return anys(out)
			}, plain: func(v any) []string {
				f := v.(bert.Features)
				return []string{fmt.Sprintf("last_hidden_state   (%d, 16)", len(f.Hidden)), vecHead(f.Mean)}
			}},
	}
}

// zoo fill-mask reads a DistilBERT masked LM as zoo predict does, and
// refuses a DistilBERT classifier, which has no vocab_transform.
func TestFillMaskCLIDistilBert(t *testing.T) {
	r := distilHeads(t)
	ckpt := r["DistilBertForMaskedLM"]
	var out, errb bytes.Buffer
	code := run([]string{"fill-mask", "--checkpoint", ckpt, "--json", "--top-k", "2", "--", "the [MASK] sat on the mat"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	code, want, stderr := predictCLI(t, "", "predict", "--checkpoint", ckpt, "--json", "--top-k", "2", "the [MASK] sat on the mat")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, want, out.String())
	out.Reset()
	errb.Reset()
	code = run([]string{"fill-mask", "--checkpoint", r["DistilBertForSequenceClassification"], "the [MASK] sat"}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), "has no masked-LM head (vocab_transform)")
}

// finetune → eval → predict through the CLI from a DistilBERT masked LM:
// the classification recipe puts pre_classifier → ReLU → classifier on
// it, the colour gives the label away, and zoo predict serves the result.
func TestDistilBertFinetuneEvalPredict(t *testing.T) {
	var rows strings.Builder
	var texts []string
	rows.WriteString("text\tlabel\n")
	for i := range 64 {
		c, label := "red", "warm"
		if i%2 == 1 {
			c, label = "blue", "cold"
		}
		texts = append(texts, fmt.Sprintf("the %s light of the sun.", c))
		fmt.Fprintf(&rows, "%s\t%s\n", texts[i], label)
	}
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 60, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := bert.DistilBertBase()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 32, 64, 2, 2
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 32, tok.VocabSize()
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb, cfg.SeqClassifDropout = 0, 0, 0
	mlm, err := bert.NewForMaskedLM(cfg, layers.WithSeed(5))
	require.NoError(t, err)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "mlm")
	require.NoError(t, models.SaveText(ckpt, mlm, tok))
	data := write(t, filepath.Join(dir, "train.tsv"), rows.String())
	runDir := filepath.Join(dir, "cls")
	var out, errb bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "classify", "--init-from", ckpt, "--train-file", data, "--run", runDir,
		"--max-steps", "60", "--batch-size", "8", "--learning-rate", "3e-3"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	final := filepath.Join(runDir, "checkpoints", "final")
	ck, err := models.Open(final)
	require.NoError(t, err)
	require.Equal(t, []string{"DistilBertForSequenceClassification"}, ck.Architectures)
	out.Reset()
	code = run([]string{"eval", "--checkpoint", final, "--labelled", data}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "accuracy 1.0000", errb.String())
	code, stdout, stderr := predictCLI(t, "", "predict", "--checkpoint", final, "the blue light of the sun.")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "cold")
	out.Reset()
	code = run([]string{"inspect", final}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "DistilBERT: 2 layers, 2 heads, 32 wide")
}

// zoo predict's bad input on DistilBERT checkpoints, in the catalogue's
// style: a clear message, no panic, the checkpoints' files unchanged.
func TestPredictDistilBertBadInput(t *testing.T) {
	r := distilHeads(t)
	dir := filepath.Dir(r["DistilBertForMaskedLM"])
	// A config with the sinusoidal position table zoo does not implement.
	sin := filepath.Join(t.TempDir(), "sinusoidal")
	ck, _, err := bert.LoadForMaskedLM(r["DistilBertForMaskedLM"])
	require.NoError(t, err)
	ck.Config.Extra = map[string]json.RawMessage{}
	require.NoError(t, ck.Save(sin))
	raw, err := os.ReadFile(filepath.Join(sin, "config.json"))
	require.NoError(t, err)
	write(t, filepath.Join(sin, "config.json"), strings.Replace(string(raw), `"sinusoidal_pos_embds": false`, `"sinusoidal_pos_embds": true`, 1))
	before := digest(t, dir)
	long := "the [MASK] sat" + strings.Repeat(" on the mat", 20)
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"a text past max_position_embeddings", []string{"predict", "--checkpoint", r["DistilBertForMaskedLM"], long}, 1,
			"the model takes at most 32 (max_position_embeddings): shorten it"},
		{"RoBERTa's <mask> in a DistilBERT text", []string{"predict", "--checkpoint", r["DistilBertForMaskedLM"], "the <mask> sat"}, 1, "no [MASK]"},
		{"sinusoidal_pos_embds true", []string{"predict", "--checkpoint", sin, "the [MASK] sat"}, 1, "sinusoidal_pos_embds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(c.args, &out, &errb)
			require.Equal(t, c.code, code, "%s%s", out.String(), errb.String())
			require.Contains(t, errb.String(), c.msg)
			require.NotContains(t, out.String()+errb.String(), "panic:")
		})
	}
	require.Equal(t, before, digest(t, dir), "no file of the checkpoints changed")
}
