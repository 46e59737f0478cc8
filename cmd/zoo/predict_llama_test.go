package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// llamaCheckpoints saves a tiny checkpoint of each LLaMA-family head zoo
// predict knows (llama, qwen2 and mistral, a language model and a
// sequence classifier of each) with datasets' Llama 2 test tokenizer, the
// language models with a generation_config.json asking for 4 greedy
// tokens; keyed by architecture.
func llamaCheckpoints(t *testing.T) map[string]string {
	t.Helper()
	tok, err := os.ReadFile("../../datasets/testdata/llama_bpe.json")
	require.NoError(t, err)
	dirs := map[string]string{}
	for prefix, preset := range map[string]func() llama.Config{"Llama": llama.Tiny, "Qwen2": llama.TinyQwen2, "Mistral": llama.TinyMistral} {
		c := preset()
		c.VocabSize = 2350
		lm, err := llama.NewForCausalLM(c, layers.WithSeed(5), layers.WithInitStd(0.3))
		require.NoError(t, err)
		dir := filepath.Join(t.TempDir(), prefix+"LM")
		require.NoError(t, lm.Save(dir))
		write(t, filepath.Join(dir, "generation_config.json"), `{"do_sample": false, "max_new_tokens": 4}`)
		write(t, filepath.Join(dir, "tokenizer.json"), string(tok))
		dirs[prefix+"ForCausalLM"] = dir
		clf, err := llama.NewForSequenceClassification(c, []string{"neg", "neu", "pos"}, layers.WithSeed(6), layers.WithInitStd(0.3))
		require.NoError(t, err)
		dir = filepath.Join(t.TempDir(), prefix+"Clf")
		require.NoError(t, clf.Save(dir))
		write(t, filepath.Join(dir, "tokenizer.json"), string(tok))
		dirs[prefix+"ForSequenceClassification"] = dir
	}
	return dirs
}

// llamaPredictCases are TestPredictEveryHead's cases of the LLaMA heads:
// zoo predict's answers, plain and --json, are the library's
// (llama.LoadTextGeneration, llama.LoadTextClassification).
func llamaPredictCases(t *testing.T) []predictCase {
	ctx := context.Background()
	dirs := llamaCheckpoints(t)
	var cases []predictCase
	for _, prefix := range []string{"Llama", "Qwen2", "Mistral"} {
		lm, clf := dirs[prefix+"ForCausalLM"], dirs[prefix+"ForSequenceClassification"]
		cases = append(cases,
			predictCase{head: prefix + "ForCausalLM", dir: lm, task: "text-generation", inputs: []string{"the cat", "a dog ran", ""},
				lib: func(t *testing.T, in []string) []any {
					p, err := llama.LoadTextGeneration(lm)
					require.NoError(t, err)
					out, err := p.Generate(ctx, in, p.Defaults())
					require.NoError(t, err)
					got := make([]any, len(out))
					for i, g := range out {
						require.Len(t, g.Tokens, 4, "generation_config.json's max_new_tokens")
						got[i] = []models.Generated{g}
					}
					return got
				}, plain: func(v any) []string { return []string{v.([]models.Generated)[0].Text} }},
			predictCase{head: prefix + "ForSequenceClassification", dir: clf, task: "text-classification", inputs: []string{"the cat sat on the mat", "a dog ran"}, flags: []string{"--top-k", "2"},
				lib: func(t *testing.T, in []string) []any {
					p, err := llama.LoadTextClassification(clf)
					require.NoError(t, err)
					p.TopK = 2
					out, err := p.Predict(ctx, in)
					require.NoError(t, err)
					return anys(out)
				}, plain: labelsPlain},
		)
	}
	return cases
}

// One prompt to a LLaMA checkpoint in plain mode streams the library's
// generated text.
func TestPredictLlamaStreamsOnePrompt(t *testing.T) {
	dir := llamaCheckpoints(t)["LlamaForCausalLM"]
	p, err := llama.LoadTextGeneration(dir)
	require.NoError(t, err)
	want, err := p.Generate(context.Background(), []string{"the cat"}, p.Defaults())
	require.NoError(t, err)
	code, out, errs := predictCLI(t, "", "predict", "--checkpoint", dir, "the cat")
	require.Equal(t, 0, code, errs)
	require.Equal(t, want[0].Text+"\n", out)
}
