package pretrain

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/train"
)

// tinyLlamaConfig is a small, fast LLaMA run on corpus: llama.Tiny's
// shape (grouped-query attention, untied head), character level, block 16.
func tinyLlamaConfig(t *testing.T, corpus string) LlamaConfig {
	cfg := DefaultLlama()
	cfg.Corpus, cfg.OutputDir, cfg.Tokenizer = corpus, filepath.Join(t.TempDir(), "run"), "char"
	cfg.Model = llama.Tiny()
	cfg.BlockSize = 16
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.Samples = 8, 150, 10, 50, 0, 0
	cfg.LearningRate, cfg.MinLR, cfg.WeightDecay = 1e-2, 1e-3, 0
	return cfg
}

// A tiny LLaMA overfits a short, repeated text, and its checkpoint is a
// Hugging Face LlamaForCausalLM folder that the text-generation pipeline
// loads.
func TestTinyLlamaOverfits(t *testing.T) {
	corpus := writeCorpus(t, strings.Repeat("a short text to learn by heart. ", 40))
	cfg := tinyLlamaConfig(t, corpus)
	cfg.Samples, cfg.SampleLen = 1, 100
	var out bytes.Buffer
	res, err := RunLlama(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Less(t, res.Loss, 0.1)
	require.Contains(t, out.String(), "llama: 19552 parameters, 2 layers, 4 query and 2 key-value heads")
	require.Contains(t, out.String(), "bits per character")
	// A character tokenizer's token is a character.
	require.Equal(t, res.ValTokens, res.ValChars)
	require.InDelta(t, res.ValLoss/math.Ln2, res.BitsPerChar, 1e-12)
	require.Len(t, res.Samples, 1)
	require.NotEmpty(t, res.Samples[0])
	for _, f := range []string{models.ConfigFile, layers.WeightsFile, decode.GenerationFile, models.TokenizerFile, TokenizerConfigFile} {
		require.FileExists(t, filepath.Join(res.Final, f))
	}
	var c struct {
		Architectures []string `json:"architectures"`
		ModelType     string   `json:"model_type"`
	}
	b, err := os.ReadFile(filepath.Join(res.Final, models.ConfigFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &c))
	require.Equal(t, []string{"LlamaForCausalLM"}, c.Architectures)
	require.Equal(t, "llama", c.ModelType)
	g, err := llama.LoadTextGeneration(res.Final)
	require.NoError(t, err)
	gc := g.Defaults()
	gc.Temperature, gc.MaxNewTokens = 0, 12
	texts, err := g.Generate(context.Background(), []string{"a short text"}, gc)
	require.NoError(t, err)
	require.Equal(t, "a short text to learn by", texts[0].Text, "greedy continues the text it learnt")
}

// A run with the byte-fallback BPE trained on the corpus: Llama's
// special tokens are its first ids and the model's bos and eos, written
// to generation_config.json and tokenizer_config.json.
func TestLlamaBPETokenizer(t *testing.T) {
	corpus := writeCorpus(t, strings.Repeat("a short text to learn by heart, with some words to merge. ", 60))
	cfg := tinyLlamaConfig(t, corpus)
	cfg.Tokenizer, cfg.BPEVocab, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps = "bpe", 300, 10, 1, 10
	cfg.BlockSize = 8
	res, err := RunLlama(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	m, err := llama.ReadConfig(res.Final)
	require.NoError(t, err)
	require.Equal(t, 1, *m.BOSTokenID)
	require.Equal(t, []int{2}, m.EOS())
	gen, err := os.ReadFile(filepath.Join(res.Final, decode.GenerationFile))
	require.NoError(t, err)
	require.JSONEq(t, `{"bos_token_id": 1, "eos_token_id": 2}`, string(gen))
	tc, err := os.ReadFile(filepath.Join(res.Final, TokenizerConfigFile))
	require.NoError(t, err)
	var tcm map[string]any
	require.NoError(t, json.Unmarshal(tc, &tcm))
	require.Equal(t, "<s>", tcm["bos_token"])
	require.Equal(t, "</s>", tcm["eos_token"])
	require.Equal(t, "<unk>", tcm["unk_token"])
	require.Contains(t, string(tc), `"bos_token": "<s>"`, "written as transformers writes it")
	require.Greater(t, res.ValChars, res.ValTokens, "a BPE token covers more than a character on average")
	require.InDelta(t, res.ValLoss*float64(res.ValTokens)/float64(res.ValChars)/math.Ln2, res.BitsPerChar, 1e-12)
}

// The split is by characters: with a character tokenizer it is
// Tokens.Split's; with a BPE the validation text starts at the same
// character, or up to one token before it.
func TestSplitText(t *testing.T) {
	text := strings.Repeat("Light is propagated from luminous bodies in time. ", 50)
	c, err := datasets.OpenCorpus(writeCorpus(t, text), datasets.CorpusOptions{})
	require.NoError(t, err)
	cut := int(float64(len(text)) * 0.9)
	for _, kind := range []string{"char", "bpe"} {
		var tok datasets.Tokenizer
		if kind == "char" {
			tok, err = datasets.NewCharTokenizer(c)
		} else {
			tok, err = trainLlamaTokenizer(context.Background(), c, 320)
		}
		require.NoError(t, err)
		toks, err := datasets.Tokenize(c, tok, "")
		require.NoError(t, err)
		tr, val, err := splitText(context.Background(), tok, toks, 0.1)
		require.NoError(t, err, kind)
		require.Equal(t, toks.Len(), tr.Len()+val.Len())
		ids, err := tr.IDs(0, tr.Len())
		require.NoError(t, err)
		head, err := tok.Decode(ids)
		require.NoError(t, err)
		if kind == "char" {
			wantTr, _, err := toks.Split(0.1)
			require.NoError(t, err)
			require.Equal(t, wantTr.Len(), tr.Len())
			require.Equal(t, cut, len(head))
			continue
		}
		require.LessOrEqual(t, len(head), cut, "no validation character is trained on")
		require.Greater(t, len(head), cut-20, "the cut is within a token of the text's")
	}
}

// An interrupted and resumed run ends with the weights, optimizer state
// and losses of the run that never stopped, bit for bit.
func TestLlamaResumesExactly(t *testing.T) {
	corpus := writeCorpus(t, strings.Repeat("a short text to learn by heart. ", 40))
	cfg := tinyLlamaConfig(t, corpus)
	cfg.MaxSteps, cfg.SaveSteps, cfg.EvalSteps = 30, 15, 15
	whole, err := RunLlama(context.Background(), cfg, io.Discard)
	require.NoError(t, err)

	cut := filepath.Join(t.TempDir(), "cut")
	require.NoError(t, os.CopyFS(cut, os.DirFS(cfg.OutputDir)))
	for _, d := range []string{"step-000030", "final", "best"} {
		require.NoError(t, os.RemoveAll(filepath.Join(cut, train.CheckpointsDir, d)))
	}
	cfg.OutputDir, cfg.Resume = cut, true
	var out bytes.Buffer
	resumed, err := RunLlama(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "at step 15")
	for _, f := range []string{layers.WeightsFile, "optimizer.safetensors"} {
		a, err := os.ReadFile(filepath.Join(whole.Final, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(resumed.Final, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "%s differs", f)
	}
	require.Equal(t, whole.ValLoss, resumed.ValLoss)
	require.Equal(t, whole.Loss, resumed.Loss)

	// Another model is another run.
	cfg.Model.IntermediateSize = 48
	_, err = RunLlama(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "model.intermediate_size: the run has 64, now 48")
}

// Fine-tuning a checkpoint on new text (init_from) starts from its
// weights and tokenizer; its settings files go on byte for byte.
func TestLlamaInitFrom(t *testing.T) {
	base := tinyLlamaConfig(t, writeCorpus(t, strings.Repeat("a short text to learn by heart. ", 40)))
	res, err := RunLlama(context.Background(), base, io.Discard)
	require.NoError(t, err)
	gen := "{\n  \"do_sample\": false\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join(res.Final, decode.GenerationFile), []byte(gen), 0o644))
	ft := tinyLlamaConfig(t, writeCorpus(t, strings.Repeat("a short text to learn. ", 40)))
	ft.InitFrom, ft.MaxSteps, ft.WarmupSteps = res.Final, 20, 2
	ft.Model.NumHiddenLayers = 3 // not used: the checkpoint's architecture wins
	var out bytes.Buffer
	got, err := RunLlama(context.Background(), ft, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "model.num_hidden_layers 3 is not used")
	kept, err := os.ReadFile(filepath.Join(got.Final, decode.GenerationFile))
	require.NoError(t, err)
	require.Equal(t, gen, string(kept))
	recs, err := os.ReadFile(filepath.Join(ft.OutputDir, "metrics.jsonl"))
	require.NoError(t, err)
	var first struct{ Loss float64 }
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(recs), "\n", 2)[0]), &first))
	require.Less(t, first.Loss, 1.5, "starts from the learnt weights (a fresh model starts near ln 15 = 2.7)")

	ft.InitFrom = t.TempDir()
	_, err = RunLlama(context.Background(), ft, io.Discard)
	require.ErrorContains(t, err, "init_from")
}

// Every learnable of the training task's graph gets a nonzero gradient.
func TestLlamaTaskEveryLearnableGetsAGradient(t *testing.T) {
	for _, mc := range []llama.Config{llama.Tiny(), llama.TinyQwen2()} {
		m, err := llama.NewForCausalLM(mc, layers.WithSeed(3))
		require.NoError(t, err)
		task := &LlamaTask{Model: m, B: 2, T: 8}
		g := m.Store.NewGraph(layers.Training())
		loss, load, err := task.Loss(g)
		require.NoError(t, err)
		grads, err := gorgonia.Grad(loss, g.Learnables()...)
		require.NoError(t, err)
		b := lmBatch{ids: make([]int, 16), targets: make([]int, 16), n: 16}
		for i := range b.ids {
			b.ids[i], b.targets[i] = (i*7)%mc.VocabSize, (i*5+1)%mc.VocabSize
		}
		require.NoError(t, load(b))
		vals, err := g.Evaluate(grads...)
		require.NoError(t, err)
		require.Len(t, vals, len(m.Store.Params()))
		for i, p := range g.Params() {
			var norm float64
			for _, v := range vals[i] {
				norm += v * v
			}
			require.Positive(t, norm, "%s: %s got no gradient", mc.ModelType, p.Name)
		}
	}
}

// Bad settings are clear errors.
func TestLlamaBadInput(t *testing.T) {
	corpus := writeCorpus(t, strings.Repeat("some text here ", 200))
	for name, c := range map[string]struct {
		edit func(*LlamaConfig)
		want string
	}{
		"block":    {func(c *LlamaConfig) { c.BlockSize = 65 }, "block_size 65 exceeds the model's max_position_embeddings 64"},
		"heads":    {func(c *LlamaConfig) { c.Model.NumKeyValueHeads = 3 }, "num_key_value_heads"},
		"batch":    {func(c *LlamaConfig) { c.BatchSize = 1 << 22 }, "lower batch_size"},
		"short":    {func(c *LlamaConfig) { c.Corpus = writeCorpus(t, "abc abc abc") }, "each needs more than one block of 16"},
		"tok":      {func(c *LlamaConfig) { c.Tokenizer = "" }, "tokenizer is empty"},
		"bpe":      {func(c *LlamaConfig) { c.Tokenizer, c.BPEVocab = "bpe", 100 }, "bpe_vocab_size 100"},
		"missing":  {func(c *LlamaConfig) { c.Corpus = filepath.Join(t.TempDir(), "missing.txt") }, "missing.txt"},
		"no model": {func(c *LlamaConfig) { c.Model.HiddenSize = 0 }, "hidden_size"},
	} {
		cfg := tinyLlamaConfig(t, corpus)
		c.edit(&cfg)
		_, err := RunLlama(context.Background(), cfg, io.Discard)
		require.ErrorContains(t, err, c.want, name)
	}
}

func TestDecodeLlamaConfig(t *testing.T) {
	cfg, err := DecodeLlamaConfig([]byte(`{"max_steps": 7, "preset": "tiny", "model": {"num_hidden_layers": 3}}`), DefaultLlama())
	require.NoError(t, err)
	require.Equal(t, 7, cfg.MaxSteps)
	require.Equal(t, 3, cfg.Model.NumHiddenLayers)
	require.Equal(t, 32, cfg.Model.HiddenSize, "the rest of the model is the preset's")
	cfg, err = DecodeLlamaConfig([]byte(`{"model": {"num_hidden_layers": 3}}`), DefaultLlama())
	require.NoError(t, err)
	require.Equal(t, 128, cfg.Model.HiddenSize, "the rest of the model keeps the defaults")
	_, err = DecodeLlamaConfig([]byte(`{"model": {"num_layers": 3}}`), DefaultLlama())
	require.ErrorContains(t, err, `unknown key "model.num_layers"`)
	_, err = DecodeLlamaConfig([]byte(`{"max_step": 7}`), DefaultLlama())
	require.ErrorContains(t, err, `unknown field "max_step"`)
	_, err = DecodeLlamaConfig([]byte(`{"preset": "huge"}`), DefaultLlama())
	require.ErrorContains(t, err, `preset "huge": zoo has opticks, qwen2.5-0.5b, smollm-135m, tiny, tinyllama-1.1b`)
	_, err = DecodeLlamaConfig([]byte(`{"model": {"hidden_act": "gelu"}}`), DefaultLlama())
	require.NoError(t, err, "read; Validate refuses it")
}

// DefaultLlama is the GPT main job's size: its parameter count is within
// 1% of DefaultGPT's with the 1024-token BPE.
func TestDefaultLlamaSize(t *testing.T) {
	m := DefaultLlama().Model
	require.Equal(t, int64(820352), m.NumParams())
	require.InDelta(t, 1, float64(m.NumParams())/813312, 0.01, "DefaultGPT's 813,312 with Opticks's 92 characters")
	require.NoError(t, DefaultLlama().Validate())
}
