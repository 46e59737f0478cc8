package main

import (
	"bytes"
	"encoding/json"
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

// albertTiny is albert-base-v2's config with embeddings 8 wide (the
// tests narrow the rest).
func albertTiny() bert.Config {
	c := bert.AlbertBase()
	c.EmbeddingSize = 8
	return c
}

// albertUnigram is datasets' ALBERT-layout Unigram (albert-base-v2's
// normalizer, pre-tokenizer, [CLS] $A [SEP] template and decoder).
func albertUnigram(t *testing.T) datasets.Tokenizer {
	tok, err := datasets.LoadTokenizer(filepath.Join("..", "..", "datasets", "testdata", "albert_unigram.json"))
	require.NoError(t, err)
	return tok
}

// bertVariantAlbert is ALBERT as the variant tests build it, with ALBERT's
// Unigram tokenizer.
var bertVariantAlbert = bertVariant{prefix: "Albert", modelType: "albert", base: albertTiny, maxPos: 32, tok: albertUnigram,
	heads: []string{"Model", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForMaskedLM", "ForPreTraining"}}

// albertPredictCases are zoo predict on ALBERT checkpoints, and fill-mask
// on AlbertForPreTraining (predictions and sop_classifier) as on
// AlbertForMaskedLM.
func albertPredictCases(t *testing.T) []predictCase {
	cases := variantPredictCases(t, bertVariantAlbert, []string{"the cat sat on the mat", "paris is in france"},
		[]string{"the [MASK] sat on the mat", "a [MASK] ran in the [MASK]"}, "where is it?", true)
	for _, c := range cases {
		if c.head == "AlbertForMaskedLM" {
			c.head, c.dir = "AlbertForPreTraining", filepath.Join(filepath.Dir(c.dir), "AlbertForPreTraining")
			c.lib = fillMaskLib(c.dir)
			return append(cases, c)
		}
	}
	t.Fatal("no AlbertForMaskedLM case")
	return nil
}

// zoo fill-mask and zoo predict on an ALBERT masked LM with ALBERT's
// Unigram tokenizer give the library's fills.
func TestFillMaskCLIAlbertUnigram(t *testing.T) {
	tok := albertUnigram(t)
	cfg := albertTiny()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 16, 32, 2, 2
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 32, tok.VocabSize()
	m, err := bert.NewForMaskedLM(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	ckpt := filepath.Join(t.TempDir(), "albert-mlm")
	require.NoError(t, models.SaveText(ckpt, m, tok))
	text := "Light is [MASK] by the Prism."
	var out, errb bytes.Buffer
	code := run([]string{"fill-mask", "--checkpoint", ckpt, "--json", "--top-k", "2", "--", text}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	code, want, stderr := predictCLI(t, "", "predict", "--checkpoint", ckpt, "--json", "--top-k", "2", text)
	require.Equal(t, 0, code, stderr)
	require.JSONEq(t, want, out.String())
	lib := fillMaskLib(ckpt)(t, []string{text})
	b, err := json.Marshal(lib[0])
	require.NoError(t, err)
	var fills []bert.Fill
	require.NoError(t, json.Unmarshal(b, &fills))
	require.Contains(t, out.String(), fills[0].Sequence, "the library's first fill")
	require.Contains(t, fills[0].Sequence, "light is", "ALBERT's tokenizer lowercases")
}

// pretrain (ALBERT: MLM + sentence order) → finetune (classify) → predict,
// through the CLI, in seconds.
func TestALBERTPretrainClassifyPredict(t *testing.T) {
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 30)
	cfg := write(t, filepath.Join(dir, "config.json"), `{
		"model": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
		          "max_position_embeddings": 64, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0},
		"vocab_size": 120, "max_seq_length": 32, "max_predictions_per_seq": 5,
		"batch_size": 8, "max_iters": 40, "warmup_iters": 4, "learning_rate": 3e-3,
		"eval_interval": 20, "save_interval": 20, "eval_batches": 2, "val_fraction": 0.1
	}`)
	runDir := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	code := run([]string{"pretrain", "bert", "--model-type", "albert", "--config", cfg, "--corpus", corpus, "--run", runDir}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "done: 40 steps")
	require.Contains(t, out.String(), "% swapped")
	require.Contains(t, out.String(), "SOP accuracy")
	ckpt := filepath.Join(runDir, "checkpoints", "final")
	ck, err := models.Open(ckpt)
	require.NoError(t, err)
	require.Equal(t, "albert", ck.ModelType)
	require.Equal(t, []string{"AlbertForPreTraining"}, ck.Architectures)
	out.Reset()
	code = run([]string{"eval", "--checkpoint", ckpt, "--corpus", corpus, "--max-seq-length", "32", "--max-predictions", "5"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Regexp(t, `MLM accuracy 0\.\d+, MLM loss \d\.\d+ \(perplexity [\d.]+\); SOP accuracy`, out.String())

	data := writeColourTSV(t, dir)
	clsDir := filepath.Join(dir, "cls")
	out.Reset()
	code = run([]string{"finetune", "bert", "--task", "classify", "--init-from", ckpt, "--train-file", data, "--run", clsDir,
		"--max-steps", "80", "--batch-size", "8", "--learning-rate", "3e-3"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	final := filepath.Join(clsDir, "checkpoints", "final")
	ck, err = models.Open(final)
	require.NoError(t, err)
	require.Equal(t, []string{"AlbertForSequenceClassification"}, ck.Architectures)
	code, stdout, stderr := predictCLI(t, "", "predict", "--checkpoint", final, "the blue fox runs to the blue den.")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "cold")
	code, stdout, stderr = predictCLI(t, "", "predict", "--checkpoint", final, "the red fox runs to the red den.")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "warm")
	out.Reset()
	code = run([]string{"inspect", final}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "ALBERT: 2 layers (num_hidden_groups 1, inner_group_num 1, embedding_size 32), 2 heads, 32 wide")
}

// The catalogue's ALBERT cases: a config whose num_hidden_layers is not a
// multiple of num_hidden_groups, as a checkpoint's config.json and as a
// pretraining config's model section, and an unknown pretraining model
// type: exit code 1, a message naming both keys (or the type), no panic,
// and the fixture's files unchanged.
func TestALBERTBadInputCatalogue(t *testing.T) {
	dir := t.TempDir()
	tok := headsWordPiece(t)
	cfg := albertTiny()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers, cfg.NumHiddenGroups = 16, 32, 2, 4, 2
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 32, tok.VocabSize()
	m, err := bert.NewForMaskedLM(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	bad := filepath.Join(dir, "bad-groups")
	require.NoError(t, models.SaveText(bad, m, tok))
	raw, err := os.ReadFile(filepath.Join(bad, models.ConfigFile))
	require.NoError(t, err)
	edited := strings.Replace(string(raw), `"num_hidden_layers": 4`, `"num_hidden_layers": 5`, 1)
	require.NotEqual(t, string(raw), edited, "the config.json holds num_hidden_layers 4")
	write(t, filepath.Join(bad, models.ConfigFile), edited)
	corpus := bertTemplates(t, dir, 6)
	badCfg := write(t, filepath.Join(dir, "bad-config.json"), `{"model": {"model_type": "albert", "num_hidden_layers": 5, "num_hidden_groups": 2}}`)
	data := write(t, filepath.Join(dir, "train.tsv"), "text\tlabel\nthe red fox.\twarm\nthe blue fox.\tcold\n")
	const msg = "num_hidden_layers 5 is not a multiple of num_hidden_groups 2"
	before := digest(t, dir)
	for _, c := range []struct {
		name string
		args []string
		msg  string
	}{
		{"predict", []string{"predict", "--checkpoint", bad, "the [MASK] sat"}, msg},
		{"fill-mask", []string{"fill-mask", "--checkpoint", bad, "the [MASK] sat"}, msg},
		{"finetune", []string{"finetune", "bert", "--task", "classify", "--init-from", bad, "--train-file", data, "--run", filepath.Join(t.TempDir(), "run")}, msg},
		{"pretrain config", []string{"pretrain", "bert", "--config", badCfg, "--corpus", corpus, "--run", filepath.Join(t.TempDir(), "run")}, msg},
		{"pretrain model type", []string{"pretrain", "bert", "--model-type", "xlnet", "--corpus", corpus, "--run", filepath.Join(t.TempDir(), "run")}, `model_type "xlnet": zoo pretrain bert pretrains bert (MLM + NSP), albert (MLM + SOP)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := func() (code int) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("zoo %s panicked: %v", strings.Join(c.args, " "), r)
					}
				}()
				return run(c.args, &out, &errb)
			}()
			require.Equal(t, 1, code, "%s\n%s", out.String(), errb.String())
			require.Contains(t, errb.String(), c.msg)
			require.NotContains(t, out.String()+errb.String(), "panic:")
		})
	}
	require.Equal(t, before, digest(t, dir), "no file of the fixture changed or went missing")
}
