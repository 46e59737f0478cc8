package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
)

// pretrain (masked LM only) → finetune (classify, tokens, qa) → predict,
// through the CLI, for RoBERTa (a byte-level BPE trained on the corpus)
// and DistilBERT (a WordPiece, no token types).
func TestBERTVariantsPretrainFinetunePredict(t *testing.T) {
	for _, v := range []struct {
		modelType, prefix, vocab string
	}{
		{"roberta", "Roberta", "400"},
		{"distilbert", "DistilBert", "120"},
	} {
		t.Run(v.modelType, func(t *testing.T) {
			dir := t.TempDir()
			corpus := bertTemplates(t, dir, 30)
			cfg := filepath.Join(dir, "config.json")
			require.NoError(t, os.WriteFile(cfg, []byte(`{
				"model": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
				          "max_position_embeddings": 64, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0},
				"vocab_size": `+v.vocab+`, "max_seq_length": 32, "max_predictions_per_seq": 5, "dynamic_masking": true,
				"batch_size": 8, "max_iters": 40, "warmup_iters": 4, "learning_rate": 3e-3,
				"eval_interval": 20, "save_interval": 20, "eval_batches": 2, "val_fraction": 0.1
			}`), 0o644))
			runCLI := func(args ...string) string {
				t.Helper()
				var out, errb bytes.Buffer
				code := run(args, &out, &errb)
				require.Equal(t, 0, code, "%v\n%s\n%s", args, errb.String(), out.String())
				return out.String()
			}
			out := runCLI("pretrain", "bert", "--model-type", v.modelType, "--config", cfg, "--corpus", corpus, "--run", filepath.Join(dir, "pre"))
			require.Contains(t, out, "done: 40 steps")
			require.Regexp(t, `held-out: MLM accuracy 0\.\d+, MLM perplexity [\d.]+ \(\d+ validation sequences\)`, out)
			require.NotContains(t, out, "NSP")
			ckpt := filepath.Join(dir, "pre", "checkpoints", "final")
			ck, err := models.Open(ckpt)
			require.NoError(t, err)
			require.Equal(t, []string{v.prefix + "ForMaskedLM"}, ck.Architectures)
			out = runCLI("eval", "--checkpoint", ckpt, "--corpus", corpus, "--max-predictions", "5")
			require.Regexp(t, `^\d+ sequences, \d+ predicted tokens: MLM accuracy 0\.\d+, MLM loss [\d.]+ \(perplexity [\d.]+\)\n$`, out)

			// classify
			data := writeColourTSV(t, dir)
			runCLI("finetune", "bert", "--task", "classify", "--init-from", ckpt, "--train-file", data, "--run", filepath.Join(dir, "cls"),
				"--max-steps", "60", "--batch-size", "8", "--learning-rate", "3e-3")
			out = runCLI("predict", "--checkpoint", filepath.Join(dir, "cls", "checkpoints", "final"), "--json", "the blue cat runs to the blue den.")
			require.Contains(t, out, `"label":"cold"`)

			// tokens
			conll := writeColourCoNLL(t, dir)
			runCLI("finetune", "bert", "--task", "tokens", "--init-from", ckpt, "--train-file", conll, "--run", filepath.Join(dir, "tok"),
				"--max-steps", "60", "--batch-size", "8", "--learning-rate", "3e-3")
			tagger := filepath.Join(dir, "tok", "checkpoints", "final")
			out = runCLI("eval", "--checkpoint", tagger, "--conll", conll)
			require.Regexp(t, `accuracy (0\.9\d+|1\.0+)`, out)
			out = runCLI("predict", "--checkpoint", tagger, "--json", "the green owl runs to the red den .")
			require.Contains(t, out, `"entity_group":"NOUN"`)
			require.Contains(t, out, `"entity_group":"ADJ"`)

			// qa
			squad := writeAnimalSquad(t, dir)
			runCLI("finetune", "bert", "--task", "qa", "--init-from", ckpt, "--train-file", squad, "--run", filepath.Join(dir, "qa"),
				"--max-steps", "80", "--batch-size", "8", "--learning-rate", "3e-3", "--max-seq-length", "32")
			qa := filepath.Join(dir, "qa", "checkpoints", "final")
			out = runCLI("eval", "--checkpoint", qa, "--squad", squad, "--max-seq-length", "32")
			require.Regexp(t, `exact match (9\d|100)\.\d\d`, out)
			out = runCLI("predict", "--checkpoint", qa, "--json", "--question", "which animal runs?", "the black owl runs to the black den.")
			require.Contains(t, out, `"answer":"owl"`)
		})
	}
}
