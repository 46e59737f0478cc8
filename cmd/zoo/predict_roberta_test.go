package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// robertaHeads writes a tiny untrained RoBERTa checkpoint of each head zoo
// predict reads, with datasets' RoBERTa-layout byte-level BPE
// (RobertaProcessing, <mask>), by architecture.
func robertaHeads(t *testing.T) map[string]string {
	t.Helper()
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "..", "datasets", "testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	cfg := bert.RobertaBase()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 16, 32, 2, 1
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 34, tok.VocabSize()
	dir := t.TempDir()
	out := map[string]string{}
	for _, arch := range []string{"RobertaModel", "RobertaForSequenceClassification", "RobertaForMaskedLM", "RobertaForTokenClassification", "RobertaForQuestionAnswering"} {
		m, err := bert.New(cfg, layers.WithSeed(3))
		require.NoError(t, err)
		var w models.Weights = m
		switch arch {
		case "RobertaForSequenceClassification":
			w, err = bert.NewForSequenceClassification(m, []string{"negative", "positive"})
		case "RobertaForMaskedLM":
			w, err = bert.NewForMaskedLM(cfg, layers.WithSeed(3))
		case "RobertaForTokenClassification":
			w, err = bert.NewForTokenClassification(m, []string{"O", "B-LOC", "I-LOC"})
		case "RobertaForQuestionAnswering":
			w, err = bert.NewForQuestionAnswering(m)
		}
		require.NoError(t, err)
		out[arch] = filepath.Join(dir, arch)
		require.NoError(t, models.SaveText(out[arch], w, tok))
		ck, err := models.Open(out[arch])
		require.NoError(t, err)
		require.Equal(t, []string{arch}, ck.Architectures)
		require.Equal(t, "roberta", ck.ModelType)
	}
	return out
}

// robertaPredictCases are zoo predict on RoBERTa checkpoints: text
// classification, fill-mask with <mask>, and feature extraction, each
// against the library's one-call pipeline.
func robertaPredictCases(t *testing.T) []predictCase {
	ctx := context.Background()
	r := robertaHeads(t)
	texts := []string{"The light of the Sun", "Rays of light are refracted"}
	return []predictCase{
		{head: "RobertaForSequenceClassification", dir: r["RobertaForSequenceClassification"], task: "text-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTextClassification(r["RobertaForSequenceClassification"])
				require.NoError(t, err)
				p.TopK = 1
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: labelsPlain},
		{head: "RobertaForMaskedLM", dir: r["RobertaForMaskedLM"], task: "fill-mask", inputs: []string{"The <mask> of the Sun", "Rays of <mask> are <mask>"},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFillMask(r["RobertaForMaskedLM"])
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
		{head: "RobertaForTokenClassification", dir: r["RobertaForTokenClassification"], task: "token-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTokenClassification(r["RobertaForTokenClassification"])
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
		{head: "RobertaForQuestionAnswering", dir: r["RobertaForQuestionAnswering"], task: "question-answering",
			inputs: texts, flags: []string{"--question", "What is it?"},
			jsonl: []string{`{"question": "What is it?", "context": "The light of the Sun"}`, `{"question": "What is it?", "context": "Rays of light are refracted"}`},
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadQuestionAnswering(r["RobertaForQuestionAnswering"])
				require.NoError(t, err)
				qs := make([]bert.QAInput, len(in))
				for i, c := range in {
					qs[i] = bert.QAInput{Question: "What is it?", Context: c}
				}
				out, err := p.Predict(ctx, qs)
				require.NoError(t, err)
				return anys(out)
			}, plain: func(v any) []string {
				a := v.(models.Answer)
				return []string{"What is it?", fmt.Sprintf("%q  %.4f  bytes %d–%d of the context", a.Answer, a.Score, a.Start, a.End)}
			}},
		{head: "RobertaModel", dir: r["RobertaModel"], task: "feature-extraction", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFeatureExtraction(r["RobertaModel"])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: func(v any) []string {
				f := v.(bert.Features)
				return []string{fmt.Sprintf("last_hidden_state   (%d, 16)", len(f.Hidden)), "pooler_output", vecHead(f.Mean)}
			}},
	}
}

// zoo predict's bad input on RoBERTa checkpoints, in the catalogue's
// style: a clear message, no panic, the checkpoints' files unchanged.
func TestPredictRobertaBadInput(t *testing.T) {
	r := robertaHeads(t) // 32 tokens at most: max_position_embeddings 34 − pad 1 − 1
	dir := filepath.Dir(r["RobertaForMaskedLM"])
	before := digest(t, dir)
	long := "The <mask> of" + strings.Repeat(" the Sun", 20)
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"a text past max_position_embeddings − padding_idx − 1", []string{"predict", "--checkpoint", r["RobertaForMaskedLM"], long}, 1,
			"argument 1: 47 tokens with <s> and </s>; the model takes at most 32 (max_position_embeddings − pad_token_id − 1): shorten it"},
		{"BERT's [MASK] in a RoBERTa text", []string{"predict", "--checkpoint", r["RobertaForMaskedLM"], "The [MASK] of the Sun"}, 1, "argument 1: no <mask>: write <mask> where the word to predict goes"},
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

// finetune → eval → predict through the CLI from a RoBERTa masked LM: the
// classification recipe puts RobertaClassificationHead on it, the colour
// gives the label away, and zoo predict serves the result.
func TestRobertaFinetuneEvalPredict(t *testing.T) {
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "..", "datasets", "testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	cfg := bert.RobertaBase()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 32, 64, 2, 2
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 34, tok.VocabSize()
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0, 0
	mlm, err := bert.NewForMaskedLM(cfg, layers.WithSeed(5))
	require.NoError(t, err)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "mlm")
	require.NoError(t, models.SaveText(ckpt, mlm, tok))
	var rows strings.Builder
	rows.WriteString("text\tlabel\n")
	for i := range 64 {
		c, label := "red", "warm"
		if i%2 == 1 {
			c, label = "blue", "cold"
		}
		fmt.Fprintf(&rows, "The %s light of the Sun.\t%s\n", c, label)
	}
	data := write(t, filepath.Join(dir, "train.tsv"), rows.String())
	runDir := filepath.Join(dir, "cls")
	var out, errb bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "classify", "--init-from", ckpt, "--train-file", data, "--run", runDir,
		"--max-steps", "60", "--batch-size", "8", "--learning-rate", "3e-3"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	final := filepath.Join(runDir, "checkpoints", "final")
	ck, err := models.Open(final)
	require.NoError(t, err)
	require.Equal(t, []string{"RobertaForSequenceClassification"}, ck.Architectures)
	out.Reset()
	code = run([]string{"eval", "--checkpoint", final, "--labelled", data}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "accuracy 1.0000", errb.String())
	code, stdout, stderr := predictCLI(t, "", "predict", "--checkpoint", final, "The blue light of the Sun.")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "cold")
}

// The older verb zoo fill-mask reads a RoBERTa masked LM and its
// byte-level BPE too, filling <mask> as zoo predict does.
func TestFillMaskCLIRoberta(t *testing.T) {
	ckpt := robertaHeads(t)["RobertaForMaskedLM"]
	var out, errb bytes.Buffer
	code := run([]string{"fill-mask", "--checkpoint", ckpt, "--json", "--top-k", "2", "--", "The <mask> of the Sun"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	code, want, stderr := predictCLI(t, "", "predict", "--checkpoint", ckpt, "--json", "--top-k", "2", "The <mask> of the Sun")
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, want, out.String())
	out.Reset()
	errb.Reset()
	code = run([]string{"fill-mask", "--checkpoint", ckpt, "The [MASK] of the Sun"}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), "no <mask>")
}
