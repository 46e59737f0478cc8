package main

import (
	"bytes"
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

// electraTinyConfig is a zoo pretrain electra --config for a tiny
// discriminator (1 layer, 32 wide, embeddings 16) and its generator at
// half its width, for seconds-long runs.
const electraTinyConfig = `{
	"model": {"hidden_size": 32, "embedding_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
	          "max_position_embeddings": 64, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0},
	"generator_size": 0.5,
	"vocab_size": 120, "max_seq_length": 32, "max_predictions_per_seq": 5,
	"batch_size": 8, "max_steps": 30, "warmup_steps": 3, "learning_rate": 3e-3,
	"eval_steps": 15, "save_steps": 15, "eval_batches": 2, "val_fraction": 0.1
}`

// pretrain electra → finetune bert (classify, tokens) --init-from the
// discriminator → eval → predict, through the CLI.
func TestElectraPretrainFinetunePredict(t *testing.T) {
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 30)
	cfg := write(t, filepath.Join(dir, "electra.json"), electraTinyConfig)
	runDir := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	code := run([]string{"pretrain", "electra", "--config", cfg, "--corpus", corpus, "--run", runDir}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "done: 30 steps")
	require.Regexp(t, `replaced-token detection accuracy 0\.\d+ \(all-original baseline 0\.\d+\), AUC 0\.\d+; generator MLM accuracy`, out.String())
	require.Contains(t, out.String(), "rtd_loss", "validation parts in the log lines")
	final := filepath.Join(runDir, "checkpoints", "final")
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "generator/config.json", "generator/model.safetensors", "generator/tokenizer.json"} {
		require.FileExists(t, filepath.Join(final, f))
	}
	ck, err := models.Open(final)
	require.NoError(t, err)
	require.Equal(t, []string{"ElectraForPreTraining"}, ck.Architectures)

	out.Reset()
	code = run([]string{"eval", "--checkpoint", final, "--corpus", bertTemplates(t, t.TempDir(), 6), "--max-seq-length", "32", "--max-predictions", "5"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Regexp(t, `pairs, \d+ tokens: replaced-token detection accuracy 0\.\d+ \(all-original baseline 0\.\d+, \d+\.\d% replaced\), AUC 0\.\d+; generator MLM accuracy`, out.String())

	// The generator fills masks; the discriminator gives features.
	out.Reset()
	code = run([]string{"fill-mask", "--checkpoint", filepath.Join(final, "generator"), "--top-k", "2", "the [MASK] fox runs to the red den."}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	code, _, stderr := predictCLI(t, "", "predict", "--checkpoint", final, "the red fox")
	require.Equal(t, 0, code, stderr)

	data := writeColourTSV(t, dir)
	clsDir := filepath.Join(dir, "cls")
	out.Reset()
	code = run([]string{"finetune", "bert", "--task", "classify", "--init-from", final, "--train-file", data, "--run", clsDir,
		"--max-steps", "60", "--batch-size", "8", "--learning-rate", "3e-3"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	clsFinal := filepath.Join(clsDir, "checkpoints", "final")
	ck, err = models.Open(clsFinal)
	require.NoError(t, err)
	require.Equal(t, []string{"ElectraForSequenceClassification"}, ck.Architectures)
	out.Reset()
	code = run([]string{"eval", "--checkpoint", clsFinal, "--labelled", data}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "accuracy 1.0000", "the colour gives the label away")
	code, stdout, stderr := predictCLI(t, "", "predict", "--checkpoint", clsFinal, "--json", "the blue fox runs to the blue den.")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, `"cold"`)

	conll := write(t, filepath.Join(dir, "tags.conll"), strings.Repeat("the O\nred B-C\nfox O\n\nthe O\nblue B-C\ncat O\n\n", 20))
	out.Reset()
	code = run([]string{"finetune", "bert", "--task", "tokens", "--init-from", final, "--train-file", conll, "--run", filepath.Join(dir, "tok"),
		"--max-steps", "4", "--batch-size", "8"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())

	var paras []datasets.SquadParagraph
	for i, a := range []string{"fox", "cat", "owl", "dog", "fox", "cat", "owl", "dog"} {
		ctx := fmt.Sprintf("the red %s runs to the red den.", a)
		paras = append(paras, datasets.SquadParagraph{Context: ctx, QAs: []datasets.SquadQA{{ID: fmt.Sprintf("q%d", i),
			Question: "which animal runs?", Answers: []datasets.SquadAnswer{{Text: a, Start: strings.Index(ctx, a)}}}}})
	}
	squad := filepath.Join(dir, "squad.json")
	require.NoError(t, datasets.WriteSquad(squad, datasets.SquadFile{Version: "1.1", Data: []datasets.SquadArticle{{Title: "animals", Paragraphs: paras}}}))
	qaDir := filepath.Join(dir, "qa")
	code = run([]string{"finetune", "bert", "--task", "qa", "--init-from", final, "--train-file", squad, "--run", qaDir,
		"--max-steps", "4", "--batch-size", "4"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	ck, err = models.Open(filepath.Join(qaDir, "checkpoints", "final"))
	require.NoError(t, err)
	require.Equal(t, []string{"ElectraForQuestionAnswering"}, ck.Architectures)
}

// Bad input to zoo pretrain electra, as the catalogue checks it: the exit
// code, a short message naming the problem, no panic. A generator whose
// embedding table does not match the discriminator's names both shapes,
// given as a config or as a checkpoint.
func TestPretrainElectraBadInput(t *testing.T) {
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 8)
	gcfg := write(t, filepath.Join(dir, "gen.json"), `{"model_type": "electra", "hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32,
		"num_hidden_layers": 1, "embedding_size": 8, "max_position_embeddings": 64}`)
	c := bert.ElectraSmall()
	c.VocabSize, c.HiddenSize, c.EmbeddingSize, c.NumAttentionHeads, c.IntermediateSize, c.NumHiddenLayers, c.MaxPositionEmbeddings = 99, 16, 16, 2, 32, 1, 64
	g, err := bert.NewForMaskedLM(c, layers.WithSeed(1))
	require.NoError(t, err)
	gdir := filepath.Join(dir, "gen-ckpt")
	require.NoError(t, g.Save(gdir))
	cfg := write(t, filepath.Join(dir, "electra.json"), electraTinyConfig)
	bertCfg := write(t, filepath.Join(dir, "bert.json"), `{"model": {"model_type": "bert", "hidden_size": 32}}`)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no corpus", []string{"pretrain", "electra"}, 1, "no corpus"},
		{"an unknown preset", []string{"pretrain", "electra", "--corpus", corpus, "--model", "huge"}, 2, `--model "huge": use tiny or small`},
		{"a generator config of another embedding size", []string{"pretrain", "electra", "--config", cfg, "--corpus", corpus, "--generator", gcfg},
			1, "gen.json: bert: the ELECTRA generator's embedding table (vocab_size 66 × embedding_size 8) does not match the discriminator's (66 × 16)"},
		{"a generator checkpoint of another vocabulary", []string{"pretrain", "electra", "--config", cfg, "--corpus", corpus, "--generator", gdir},
			1, "the ELECTRA generator's embedding table (vocab_size 99 × embedding_size 16) does not match the discriminator's (66 × 16)"},
		{"a BERT model section", []string{"pretrain", "electra", "--config", bertCfg, "--corpus", corpus}, 1, `needs model_type "electra"`},
		{"a zero λ", []string{"pretrain", "electra", "--corpus", corpus, "--disc-weight", "0"}, 1, "disc_weight 0 must be positive"},
		{"init from a BERT", []string{"pretrain", "electra", "--corpus", corpus, "--init-from", pretrainTinyBERT(t)}, 1, "not an ELECTRA pretraining checkpoint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(c.args, "--run", filepath.Join(t.TempDir(), "r"))
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			all := out.String() + errb.String()
			require.Equal(t, c.code, code, all)
			require.Contains(t, errb.String(), c.want)
			require.NotContains(t, all, "panic:")
			msg, _, _ := strings.Cut(strings.ToLower(errb.String()), "usage:")
			require.LessOrEqual(t, strings.Count(strings.TrimSpace(msg), "\n"), 2, "a short message:\n%s", errb.String())
			_, err := os.Stat(filepath.Join(filepath.Dir(args[len(args)-1]), "r", "checkpoints"))
			require.True(t, os.IsNotExist(err), "no checkpoint written")
		})
	}
}
