package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// llamaCorpus writes a tiny corpus and a labelled CSV of its sentences:
// "pos" texts use one set of words, "neg" texts another.
func llamaCorpus(t *testing.T) (dir, corpus, csv string) {
	dir = t.TempDir()
	var text, lab strings.Builder
	lab.WriteString("text,label\n")
	words := map[string][]string{"pos": {"good", "great", "nice", "fine"}, "neg": {"bad", "awful", "poor", "sad"}}
	for i := 0; i < 240; i++ {
		label := []string{"pos", "neg"}[i%2]
		s := fmt.Sprintf("the %s fox is %s", words[label][i%4], words[label][(i/2)%4])
		text.WriteString(s + ". ")
		fmt.Fprintf(&lab, "%s,%s\n", s, label)
	}
	corpus, csv = filepath.Join(dir, "corpus.txt"), filepath.Join(dir, "labels.csv")
	require.NoError(t, os.WriteFile(corpus, []byte(text.String()), 0o644))
	require.NoError(t, os.WriteFile(csv, []byte(lab.String()), 0o644))
	return dir, corpus, csv
}

// The LLaMA family through the CLI, in seconds: pretrain a tiny model
// with a byte-fallback BPE trained on the corpus, fine-tune it as a
// language model on new text and as a classifier, generate from it,
// score it and inspect it.
func TestLlamaPretrainFinetuneGenerate(t *testing.T) {
	dir, corpus, csv := llamaCorpus(t)
	pre := filepath.Join(dir, "pre")
	var out, errb bytes.Buffer
	code := run([]string{"pretrain", "llama", "--corpus", corpus, "--run", pre, "--preset", "tiny", "--layers", "1", "--vocab-size", "300",
		"--block-size", "16", "--batch-size", "4", "--max-steps", "20", "--eval-steps", "10", "--save-steps", "10"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "llama: ")
	require.Contains(t, out.String(), "1 layers, 4 query and 2 key-value heads, 32 wide (SwiGLU 64), block 16")
	require.Contains(t, out.String(), "done: 20 steps")
	require.Contains(t, out.String(), "bits per character")
	require.Contains(t, out.String(), "--- sample 1 ---")
	final := filepath.Join(pre, "checkpoints", "final")
	for _, f := range []string{"config.json", "model.safetensors", "generation_config.json", "tokenizer.json", "tokenizer_config.json"} {
		require.FileExists(t, filepath.Join(final, f))
	}

	ft := filepath.Join(dir, "ft")
	more := filepath.Join(dir, "more.txt")
	require.NoError(t, os.WriteFile(more, []byte(strings.Repeat("the nice fox is great. the sad fox is poor. ", 60)), 0o644))
	out.Reset()
	code = run([]string{"finetune", "llama", "--task", "lm", "--init-from", final, "--corpus", more, "--run", ft, "--max-steps", "10", "--batch-size", "4", "--block-size", "16"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "done: 10 steps")

	cls := filepath.Join(dir, "cls")
	out.Reset()
	code = run([]string{"finetune", "llama", "--task", "classify", "--init-from", final, "--train-file", csv, "--run", cls, "--max-steps", "60",
		"--batch-size", "16", "--learning-rate", "3e-3", "--warmup-steps", "5", "--eval-steps", "30"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "llama classifier: 2 labels")
	require.Contains(t, out.String(), "validation accuracy 1.0000")

	out.Reset()
	code = run([]string{"generate", "--checkpoint", filepath.Join(ft, "checkpoints", "final"), "--prompt", "the nice", "--max-new-tokens", "6", "--temperature", "0"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.True(t, strings.HasPrefix(out.String(), "the nice"), out.String())
	require.Greater(t, len(out.String()), len("the nice\n"))

	out.Reset()
	code = run([]string{"eval", "--checkpoint", final, "--corpus", corpus, "--block-size", "16"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "perplexity")
	out.Reset()
	code = run([]string{"eval", "--checkpoint", filepath.Join(cls, "checkpoints", "final"), "--labelled", csv}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "accuracy 1.0000")

	out.Reset()
	code = run([]string{"inspect", final}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "family     llama (model_type llama)")

	// Bad flags are clear errors.
	errb.Reset()
	require.Equal(t, 2, run([]string{"pretrain", "llama", "--preset", "huge", "--run", filepath.Join(dir, "x")}, &out, &errb))
	require.Contains(t, errb.String(), `preset "huge"`)
	errb.Reset()
	require.Equal(t, 2, run([]string{"finetune", "llama", "--task", "lm", "--corpus", more}, &out, &errb))
	require.Contains(t, errb.String(), "--init-from is required")
	errb.Reset()
	require.Equal(t, 2, run([]string{"finetune", "llama", "--task", "qa"}, &out, &errb))
	require.Contains(t, errb.String(), `--task "qa": use lm or classify`)
}
