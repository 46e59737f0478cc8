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

// bertVariant is one model type of the BERT family as these tests build
// it: its architectures' prefix, its config and its tokenizer.
type bertVariant struct {
	prefix    string // of the architectures: Bert, DistilBert, Roberta
	modelType string // config.json's model_type
	base      func() bert.Config
	maxPos    int      // max_position_embeddings of the tiny checkpoints
	heads     []string // the architectures' suffixes bertVariantHeads writes
	tok       func(t *testing.T) datasets.Tokenizer
}

// headsWordPiece is the WordPiece the tiny BERT and DistilBERT
// checkpoints share.
func headsWordPiece(t *testing.T) datasets.Tokenizer {
	tok, err := datasets.TrainWordPieceTexts(context.Background(),
		[]string{"the cat sat on the mat", "a dog ran in the park", "paris is in france"},
		datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	return tok
}

// robertaBPE is datasets' RoBERTa-layout byte-level BPE
// (RobertaProcessing, <mask>).
func robertaBPE(t *testing.T) datasets.Tokenizer {
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "..", "datasets", "testdata", "roberta_bpe.json"))
	require.NoError(t, err)
	return tok
}

var (
	bertVariantBERT = bertVariant{prefix: "Bert", modelType: "bert", base: bert.Tiny, maxPos: 32, tok: headsWordPiece,
		heads: []string{"Model", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForMaskedLM", "ForPreTraining"}}
	bertVariantDistil = bertVariant{prefix: "DistilBert", modelType: "distilbert", base: bert.DistilBertBase, maxPos: 32, tok: headsWordPiece,
		heads: []string{"Model", "ForSequenceClassification", "ForMaskedLM", "ForTokenClassification", "ForQuestionAnswering"}}
	bertVariantRoberta = bertVariant{prefix: "Roberta", modelType: "roberta", base: bert.RobertaBase, maxPos: 34, tok: robertaBPE,
		heads: []string{"Model", "ForSequenceClassification", "ForMaskedLM", "ForTokenClassification", "ForQuestionAnswering"}}
)

// bertVariantHeads writes a tiny untrained checkpoint of v of each head
// zoo predict reads, sharing one tokenizer, by architecture.
func bertVariantHeads(t *testing.T, v bertVariant) map[string]string {
	t.Helper()
	tok := v.tok(t)
	cfg := v.base()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 16, 32, 2, 1
	cfg.MaxPositionEmbeddings, cfg.VocabSize = v.maxPos, tok.VocabSize()
	if cfg.ModelType == bert.ElectraModelType {
		cfg.EmbeddingSize = 8
	}
	dir := t.TempDir()
	out := map[string]string{}
	for _, head := range v.heads {
		arch := v.prefix + head
		m, err := bert.New(cfg, layers.WithSeed(3))
		require.NoError(t, err)
		var w models.Weights = m
		switch head {
		case "ForSequenceClassification":
			w, err = bert.NewForSequenceClassification(m, []string{"negative", "positive"})
		case "ForTokenClassification":
			w, err = bert.NewForTokenClassification(m, []string{"O", "B-LOC", "I-LOC"})
		case "ForQuestionAnswering":
			w, err = bert.NewForQuestionAnswering(m)
		case "ForMaskedLM":
			w, err = bert.NewForMaskedLM(cfg, layers.WithSeed(3))
		case "ForPreTraining":
			w, err = bert.NewForPreTraining(cfg, layers.WithSeed(3))
			if cfg.ModelType == bert.ElectraModelType {
				w, err = bert.NewElectraForPreTraining(cfg, layers.WithSeed(3))
			}
		}
		require.NoError(t, err)
		out[arch] = filepath.Join(dir, arch)
		require.NoError(t, models.SaveText(out[arch], w, tok))
		ck, err := models.Open(out[arch])
		require.NoError(t, err)
		require.Equal(t, []string{arch}, ck.Architectures)
		require.Equal(t, v.modelType, ck.ModelType)
	}
	return out
}

// variantPredictCases are zoo predict on v's checkpoints: text
// classification, fill-mask with masked (its mask token), token
// classification, question answering with question, and feature
// extraction (pooled: whether the backbone has a pooler), each against
// the library's one-call pipeline.
func variantPredictCases(t *testing.T, v bertVariant, texts, masked []string, question string, pooled bool) []predictCase {
	ctx := context.Background()
	r := bertVariantHeads(t, v)
	arch := func(head string) string { return v.prefix + head }
	jsonl := make([]string, len(texts))
	for i, c := range texts {
		jsonl[i] = fmt.Sprintf(`{"question": %q, "context": %q}`, question, c)
	}
	featuresPlain := []string{}
	if pooled {
		featuresPlain = []string{"pooler_output"}
	}
	return []predictCase{
		{head: arch("ForSequenceClassification"), dir: r[arch("ForSequenceClassification")], task: "text-classification", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadTextClassification(r[arch("ForSequenceClassification")])
				require.NoError(t, err)
				p.TopK = 1
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				return anys(out)
			}, plain: labelsPlain},
		{head: arch("ForMaskedLM"), dir: r[arch("ForMaskedLM")], task: "fill-mask", inputs: masked,
			lib: fillMaskLib(r[arch("ForMaskedLM")]), plain: func(v any) []string {
				fills, ok := v.([]bert.Fill)
				if !ok {
					fills = v.([][]bert.Fill)[1]
				}
				return []string{fmt.Sprintf("%.4f", fills[0].Score), fills[0].Sequence}
			}},
		{head: arch("ForTokenClassification"), dir: r[arch("ForTokenClassification")], task: "token-classification", inputs: texts,
			lib: tokensLib(r[arch("ForTokenClassification")]), plain: func(v any) []string {
				var out []string
				for _, e := range v.([]models.Entity) {
					out = append(out, fmt.Sprintf("%s  %s  %.4f  bytes %d–%d", e.Group, strings.TrimSpace(e.Word), e.Score, e.Start, e.End))
				}
				if len(out) == 0 {
					out = []string{"(no entities)"}
				}
				return out
			}},
		{head: arch("ForQuestionAnswering"), dir: r[arch("ForQuestionAnswering")], task: "question-answering",
			inputs: texts, flags: []string{"--question", question}, jsonl: jsonl,
			lib: qaLib(r[arch("ForQuestionAnswering")], question), plain: func(v any) []string {
				a := v.(models.Answer)
				return []string{question, fmt.Sprintf("%q  %.4f  bytes %d–%d of the context", a.Answer, a.Score, a.Start, a.End)}
			}},
		{head: arch("Model"), dir: r[arch("Model")], task: "feature-extraction", inputs: texts,
			lib: func(t *testing.T, in []string) []any {
				p, err := bert.LoadFeatureExtraction(r[arch("Model")])
				require.NoError(t, err)
				out, err := p.Predict(ctx, in)
				require.NoError(t, err)
				if pooled {
					require.NotNil(t, out[0].Pooled, "%s has a pooler", arch("Model"))
				} else {
					require.Nil(t, out[0].Pooled, "%s has no pooler", arch("Model"))
				}
				return anys(out)
			}, plain: func(v any) []string {
				f := v.(bert.Features)
				return append(append([]string{fmt.Sprintf("last_hidden_state   (%d, 16)", len(f.Hidden))}, featuresPlain...), vecHead(f.Mean))
			}},
	}
}

// fillMaskLib is the library's answer of the fill-mask pipeline of the
// checkpoint in dir: each input's fills, a list per mask when it has
// several, as zoo predict prints them.
func fillMaskLib(dir string) func(t *testing.T, in []string) []any {
	return func(t *testing.T, in []string) []any {
		p, err := bert.LoadFillMask(dir)
		require.NoError(t, err)
		out, err := p.Predict(context.Background(), in)
		require.NoError(t, err)
		got := make([]any, len(out))
		for i, fills := range out {
			got[i] = fills // a list per mask, as the pipeline gives several masks
			if len(fills) == 1 {
				got[i] = fills[0]
			}
		}
		return got
	}
}

// tokensLib is the library's answer of the token-classification pipeline
// of the checkpoint in dir: each input's entities, [] for none.
func tokensLib(dir string) func(t *testing.T, in []string) []any {
	return func(t *testing.T, in []string) []any {
		p, err := bert.LoadTokenClassification(dir)
		require.NoError(t, err)
		out, err := p.Predict(context.Background(), in)
		require.NoError(t, err)
		got := anys(out)
		for i, es := range out {
			if es == nil {
				got[i] = []models.Entity{}
			}
		}
		return got
	}
}

// qaLib is the library's answer of the question-answering pipeline of the
// checkpoint in dir: question asked of each input.
func qaLib(dir, question string) func(t *testing.T, in []string) []any {
	return func(t *testing.T, in []string) []any {
		p, err := bert.LoadQuestionAnswering(dir)
		require.NoError(t, err)
		qs := make([]bert.QAInput, len(in))
		for i, c := range in {
			qs[i] = bert.QAInput{Question: question, Context: c}
		}
		out, err := p.Predict(context.Background(), qs)
		require.NoError(t, err)
		return anys(out)
	}
}

// distilPredictCases are zoo predict on DistilBERT checkpoints.
func distilPredictCases(t *testing.T) []predictCase {
	return variantPredictCases(t, bertVariantDistil, []string{"the cat sat on the mat", "paris is in france"},
		[]string{"the [MASK] sat on the mat", "a [MASK] ran in the [MASK]"}, "where is it?", false)
}

// robertaPredictCases are zoo predict on RoBERTa checkpoints, fill-mask
// with <mask>.
func robertaPredictCases(t *testing.T) []predictCase {
	return variantPredictCases(t, bertVariantRoberta, []string{"The light of the Sun", "Rays of light are refracted"},
		[]string{"The <mask> of the Sun", "Rays of <mask> are <mask>"}, "What is it?", true)
}

// zoo fill-mask reads a masked LM of each variant (and its tokenizer) as
// zoo predict does, and refuses what it cannot fill: a DistilBERT
// classifier, which has no vocab_transform; BERT's [MASK] in a RoBERTa
// text.
func TestFillMaskCLIVariants(t *testing.T) {
	for _, c := range []struct {
		name, text  string
		v           bertVariant
		refuseHead  string // the checkpoint zoo fill-mask refuses, by architecture suffix
		refuseText  string
		refuseError string
	}{
		{"DistilBERT", "the [MASK] sat on the mat", bertVariantDistil, "ForSequenceClassification", "the [MASK] sat", "has no masked-LM head (vocab_transform)"},
		{"RoBERTa", "The <mask> of the Sun", bertVariantRoberta, "ForMaskedLM", "The [MASK] of the Sun", "no <mask>"},
		{"ELECTRA", "the [MASK] sat on the mat", bertVariantElectra, "ForPreTraining", "the [MASK] sat", "has no masked-LM head (generator_predictions)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := bertVariantHeads(t, c.v)
			ckpt := r[c.v.prefix+"ForMaskedLM"]
			var out, errb bytes.Buffer
			code := run([]string{"fill-mask", "--checkpoint", ckpt, "--json", "--top-k", "2", "--", c.text}, &out, &errb)
			require.Equal(t, 0, code, errb.String())
			code, want, stderr := predictCLI(t, "", "predict", "--checkpoint", ckpt, "--json", "--top-k", "2", c.text)
			require.Equal(t, 0, code, stderr)
			require.JSONEq(t, want, out.String())
			out.Reset()
			errb.Reset()
			code = run([]string{"fill-mask", "--checkpoint", r[c.v.prefix+c.refuseHead], c.refuseText}, &out, &errb)
			require.Equal(t, 1, code)
			require.Contains(t, errb.String(), c.refuseError)
		})
	}
}

// finetune → eval → predict through the CLI from a masked LM of each
// variant: the classification recipe puts the variant's head on it
// (DistilBERT: pre_classifier → ReLU → classifier; RoBERTa:
// RobertaClassificationHead), the colour gives the label away, and zoo
// predict serves the result.
func TestVariantFinetuneEvalPredict(t *testing.T) {
	for _, c := range []struct {
		name    string
		v       bertVariant
		text    string // a format of the texts, with the colour
		inspect string // what zoo inspect says of the result; "" not checked
	}{
		{"DistilBERT", bertVariantDistil, "the %s light of the sun.", "DistilBERT: 2 layers, 2 heads, 32 wide"},
		{"RoBERTa", bertVariantRoberta, "The %s light of the Sun.", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rows strings.Builder
			var texts []string
			rows.WriteString("text\tlabel\n")
			for i := range 64 {
				colour, label := "red", "warm"
				if i%2 == 1 {
					colour, label = "blue", "cold"
				}
				texts = append(texts, fmt.Sprintf(c.text, colour))
				fmt.Fprintf(&rows, "%s\t%s\n", texts[i], label)
			}
			var tok datasets.Tokenizer
			if c.v.modelType == "roberta" {
				tok = robertaBPE(t)
			} else {
				wp, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 60, MinFrequency: 1, Lowercase: true})
				require.NoError(t, err)
				tok = wp
			}
			cfg := c.v.base()
			cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 32, 64, 2, 2
			cfg.MaxPositionEmbeddings, cfg.VocabSize = c.v.maxPos, tok.VocabSize()
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
			require.Equal(t, []string{c.v.prefix + "ForSequenceClassification"}, ck.Architectures)
			out.Reset()
			code = run([]string{"eval", "--checkpoint", final, "--labelled", data}, &out, &errb)
			require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
			require.Contains(t, out.String(), "accuracy 1.0000", errb.String())
			code, stdout, stderr := predictCLI(t, "", "predict", "--checkpoint", final, fmt.Sprintf(c.text, "blue"))
			require.Equal(t, 0, code, stderr)
			require.Contains(t, stdout, "cold")
			if c.inspect != "" {
				out.Reset()
				code = run([]string{"inspect", final}, &out, &errb)
				require.Equal(t, 0, code, errb.String())
				require.Contains(t, out.String(), c.inspect)
			}
		})
	}
}

// zoo predict's bad input on DistilBERT and RoBERTa checkpoints, in the
// catalogue's style: a clear message, no panic, the checkpoints' files
// unchanged.
func TestPredictVariantBadInput(t *testing.T) {
	distil := bertVariantHeads(t, bertVariantDistil)
	roberta := bertVariantHeads(t, bertVariantRoberta) // 32 tokens at most: max_position_embeddings 34 − pad 1 − 1
	// A DistilBERT config with the sinusoidal position table: the file
	// holds its table (here the learned one), which zoo reads and adds
	// as a constant, so it predicts what the learned model predicts.
	sin := filepath.Join(t.TempDir(), "sinusoidal")
	ck, _, err := bert.LoadForMaskedLM(distil["DistilBertForMaskedLM"])
	require.NoError(t, err)
	ck.Config.Extra = map[string]json.RawMessage{}
	require.NoError(t, ck.Save(sin))
	raw, err := os.ReadFile(filepath.Join(sin, "config.json"))
	require.NoError(t, err)
	write(t, filepath.Join(sin, "config.json"), strings.Replace(string(raw), `"sinusoidal_pos_embds": false`, `"sinusoidal_pos_embds": true`, 1))
	tj, err := os.ReadFile(filepath.Join(distil["DistilBertForMaskedLM"], models.TokenizerFile))
	require.NoError(t, err)
	write(t, filepath.Join(sin, models.TokenizerFile), string(tj))
	dirs := []string{filepath.Dir(distil["DistilBertForMaskedLM"]), filepath.Dir(roberta["RobertaForMaskedLM"])}
	before := []map[string]string{digest(t, dirs[0]), digest(t, dirs[1])}
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"DistilBERT: a text past max_position_embeddings", []string{"predict", "--checkpoint", distil["DistilBertForMaskedLM"], "the [MASK] sat" + strings.Repeat(" on the mat", 20)}, 1,
			"the model takes at most 32 (max_position_embeddings): shorten it"},
		{"DistilBERT: RoBERTa's <mask> in a DistilBERT text", []string{"predict", "--checkpoint", distil["DistilBertForMaskedLM"], "the <mask> sat"}, 1, "no [MASK]"},
		{"RoBERTa: a text past max_position_embeddings − padding_idx − 1", []string{"predict", "--checkpoint", roberta["RobertaForMaskedLM"], "The <mask> of" + strings.Repeat(" the Sun", 20)}, 1,
			"argument 1: 47 tokens with <s> and </s>; the model takes at most 32 (max_position_embeddings − pad_token_id − 1): shorten it"},
		{"RoBERTa: BERT's [MASK] in a RoBERTa text", []string{"predict", "--checkpoint", roberta["RobertaForMaskedLM"], "The [MASK] of the Sun"}, 1, "argument 1: no <mask>: write <mask> where the word to predict goes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(c.args, &out, &errb)
			require.Equal(t, c.code, code, "%s%s", out.String(), errb.String())
			require.Contains(t, errb.String(), c.msg)
			require.NotContains(t, out.String()+errb.String(), "panic:")
		})
	}
	require.Equal(t, before, []map[string]string{digest(t, dirs[0]), digest(t, dirs[1])}, "no file of the checkpoints changed")
	var learned, sinusoidal, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"predict", "--checkpoint", distil["DistilBertForMaskedLM"], "--json", "the [MASK] sat"}, &learned, &errb), errb.String())
	require.Equal(t, 0, run([]string{"predict", "--checkpoint", sin, "--json", "the [MASK] sat"}, &sinusoidal, &errb), errb.String())
	require.Equal(t, learned.String(), sinusoidal.String(), "sinusoidal_pos_embds true reads the file's table")
}
