package pretrain

import (
	"context"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/train"
)

// LlamaSpecials are the special tokens of the byte-fallback BPE a LLaMA
// run trains on its corpus, in id order: unknown, beginning and end of
// sequence, as Llama 2's tokenizer has them (ids 0, 1 and 2).
var LlamaSpecials = []string{"<unk>", "<s>", "</s>"}

// LlamaResult is what a LLaMA training run produced: the engine's result,
// the samples, and the validation loss in bits per character of the text
// its targets cover, which compares runs whose tokenizers differ.
type LlamaResult struct {
	Result
	// BitsPerChar is ValLoss (nats per token) × ValTokens / ValChars /
	// ln 2.
	BitsPerChar float64
	// ValTokens are the validation targets scored (every
	// non-overlapping window's), ValChars the characters (runes) of the
	// text they decode to.
	ValTokens, ValChars int
}

// RunLlama trains a LLaMA-family causal LM as cfg says (a new model, or,
// with init_from, a checkpoint's: LM fine-tuning), writing checkpoints
// (Hugging Face LlamaForCausalLM folders), metrics.jsonl and loss.png
// under cfg.OutputDir and the progress to out. It is train.Run with the
// LLaMA recipe (LlamaRecipe). Resume, run.json and interrupts are as
// RunGPT's.
func RunLlama(ctx context.Context, cfg LlamaConfig, out io.Writer) (*LlamaResult, error) {
	r, err := NewLlamaRecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.cfg.Args, r, out)
	if err != nil {
		return nil, err
	}
	return &LlamaResult{Result: Result{Result: res, Samples: r.Samples}, BitsPerChar: r.BitsPerChar, ValTokens: r.ValTokens, ValChars: r.ValChars}, nil
}

// LlamaRecipe is LLaMA-family causal-LM training as a train.Recipe: the
// corpus, its tokenizer (a byte-fallback BPE trained on it, characters,
// a tokenizer.json, or the checkpoint's), the model, GPT's causal-LM
// batches, and samples and bits per character at the end. Use it with
// train.Run, or RunLlama. A recipe serves one train.Run at a time.
type LlamaRecipe struct {
	cfg    LlamaConfig
	corpus *datasets.Corpus
	tok    datasets.Tokenizer
	m      *llama.ForCausalLM
	// train and val are the corpus's token splits, set by Setup.
	train, val *datasets.Tokens
	// Samples are the texts generated once training ended (none on
	// data-parallel ranks other than 0).
	Samples []string
	// BitsPerChar, ValTokens and ValChars are set by Finish (see
	// LlamaResult).
	BitsPerChar         float64
	ValTokens, ValChars int
}

// NewLlamaRecipe checks cfg, opens its corpus (Opticks when empty) and
// checks that it is text, and that init_from, if given, is a LLaMA-family
// checkpoint: the errors a user should see before anything is written.
func NewLlamaRecipe(ctx context.Context, cfg LlamaConfig) (*LlamaRecipe, error) {
	if cfg.Corpus == "" {
		cfg.Corpus = OpticksPath()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	corpus, err := openTextCorpus(ctx, cfg.Corpus, cfg.InitFrom, "llama")
	if err != nil {
		return nil, err
	}
	return &LlamaRecipe{cfg: cfg, corpus: corpus}, nil
}

// Record is what run.json records: the corpus's size and hash, the
// tokenizer settings, the model config as given (its vocabulary and token
// ids come from the tokenizer), the block and the split.
func (r *LlamaRecipe) Record(ctx context.Context) (train.Record, error) {
	cfg := r.cfg
	rec, err := corpusRecord(ctx, r.corpus)
	if err != nil {
		return nil, err
	}
	trained := ""
	switch cfg.Tokenizer {
	case "bpe":
		trained = fmt.Sprintf("byte-fallback bpe of %d tokens", cfg.BPEVocab)
	case "char":
		trained = "char"
	}
	if err := setTokenizer(rec, cfg.InitFrom, cfg.Tokenizer, trained); err != nil {
		return nil, err
	}
	if err := rec.SetFields("model.", cfg.Model, "vocab_size", "bos_token_id", "eos_token_id", "pad_token_id"); err != nil {
		return nil, err
	}
	for k, v := range map[string]any{"block_size": cfg.BlockSize, "val_fraction": cfg.ValFraction} {
		if err := rec.Set(k, v); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// Setup chooses the tokenizer and the model (the checkpoint's on a
// resume or with init_from; else a tokenizer trained on or read for the
// corpus, and cfg's model with its vocabulary and token ids), tokenizes
// and splits the corpus, and returns the step's activation memory.
func (r *LlamaRecipe) Setup(ctx context.Context, resume string, out io.Writer) (train.MemoryNeed, error) {
	cfg := &r.cfg
	var err error
	switch {
	case resume != "": // the run's tokenizer and model, whatever the corpus would give now
		if r.tok, err = models.LoadTokenizer(resume); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: resume: %w", err)
		}
		if r.m, _, err = llama.LoadForCausalLM(resume, models.Strict()); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: resume: %w", err)
		}
		cfg.Model = r.m.Config
	case cfg.InitFrom != "": // fine-tuning: the checkpoint's model and tokenizer
		if r.tok, err = models.LoadTokenizer(cfg.InitFrom); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: init_from: %w", err)
		}
		var rep models.LoadReport
		if r.m, rep, err = llama.LoadForCausalLM(cfg.InitFrom); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: init_from: %w", err)
		}
		if len(rep.Dropped) > 0 || len(rep.Created) > 0 {
			fmt.Fprintf(out, "init_from: %s: dropped %v, created %v (trained from their initial values)\n", cfg.InitFrom, rep.Dropped, rep.Created)
		}
		fmt.Fprint(out, notUsed(cfg.Model, r.m.Config, DefaultLlama().Model, cfg.ModelJSON, "vocab_size", "bos_token_id", "eos_token_id", "pad_token_id"))
		cfg.Model = r.m.Config
	case cfg.Tokenizer == "bpe": // the slow choice, which an interrupt must stop
		if r.tok, err = trainLlamaTokenizer(ctx, r.corpus, cfg.BPEVocab); err != nil {
			return train.MemoryNeed{}, err
		}
	default:
		if r.tok, err = chooseTokenizer(ctx, GPTConfig{Tokenizer: cfg.Tokenizer, BPEVocab: cfg.BPEVocab}, r.corpus); err != nil {
			return train.MemoryNeed{}, err
		}
	}
	if r.m == nil {
		mc := &cfg.Model
		mc.VocabSize = r.tok.VocabSize()
		mc.BOSTokenID, mc.EOSTokenID, mc.PadTokenID = nil, nil, nil
		if id, ok := specialID(r.tok, "<s>"); ok {
			mc.BOSTokenID = &id
		}
		if id, ok := specialID(r.tok, "</s>"); ok {
			mc.EOSTokenID = llama.IDs(id)
		}
		if err := mc.Validate(); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: model: %w", err)
		}
	} else if n := r.tok.VocabSize(); n > r.m.Config.VocabSize {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: the checkpoint's tokenizer has %d tokens, its model %d", n, r.m.Config.VocabSize)
	}
	block := cfg.Block()
	if err := cfg.Model.CheckLength(block); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: block_size %d: %w (lower --block-size)", block, err)
	}
	toks, err := tokenizeCorpus(ctx, r.corpus, r.tok, cfg.CacheDir, cfg.OutputDir, out)
	if err != nil {
		return train.MemoryNeed{}, err
	}
	if r.train, r.val, err = splitText(ctx, r.tok, toks, cfg.ValFraction); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: %w", err)
	}
	if err := checkSplit(toks, r.train, r.val, cfg.ValFraction, block, "block_size"); err != nil {
		return train.MemoryNeed{}, err
	}
	return train.MemoryNeed{Bytes: cfg.Model.ActivationBytes(cfg.BatchSize, block, true, true),
		What:  fmt.Sprintf("pretrain: batch_size %d × block %d for activations", cfg.BatchSize, block),
		Lower: "lower batch_size (use gradient_accumulation_steps to keep the tokens per step) or block_size"}, nil
}

// trainLlamaTokenizer trains the tokenizer of a new LLaMA run on c: a
// SentencePiece-style byte-fallback BPE of at most vocab tokens in Llama
// 2's layout (datasets.TrainLlamaBPE), LlamaSpecials first.
func trainLlamaTokenizer(ctx context.Context, c *datasets.Corpus, vocab int) (datasets.Tokenizer, error) {
	return datasets.TrainLlamaBPE(ctx, c, datasets.LlamaBPEOptions{VocabSize: vocab, SpecialTokens: LlamaSpecials})
}

// splitText splits toks at the token boundary where the last valFraction
// of the text's characters (runes, as decoded) begins: after the last
// token that ends at or before character int(n·(1−valFraction)) of n.
// The validation text is then the same whatever the tokenizer (a
// character tokenizer's split is Tokens.Split's), but for the part of the
// one token that straddles the cut, which goes to validation: no
// validation character is trained on.
func splitText(ctx context.Context, tok datasets.Tokenizer, toks *datasets.Tokens, valFraction float64) (trainToks, val *datasets.Tokens, err error) {
	n := toks.Len()
	chars := func(k int) (int, error) { // characters of the first k tokens
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		ids, err := toks.IDs(0, k)
		if err != nil {
			return 0, err
		}
		s, err := tok.Decode(ids)
		return utf8.RuneCountInString(s), err
	}
	total, err := chars(n)
	if err != nil {
		return nil, nil, fmt.Errorf("split: %w", err)
	}
	cut := int(float64(total) * (1 - valFraction))
	lo, hi := 0, n // the smallest k with chars(k) > cut lies in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		c, err := chars(mid)
		if err != nil {
			return nil, nil, fmt.Errorf("split: %w", err)
		}
		if c > cut {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	lo-- // the last k with chars(k) <= cut
	if lo <= 0 || lo >= n {
		return nil, nil, fmt.Errorf("split: %d tokens with validation fraction %v leave one part empty", n, valFraction)
	}
	f := 1 - (float64(lo)+0.5)/float64(n) // Split cuts at int(n·(1−f)) = lo
	if trainToks, val, err = toks.Split(f); err != nil {
		return nil, nil, err
	}
	if trainToks.Len() != lo {
		return nil, nil, fmt.Errorf("split: cut at token %d, not %d", trainToks.Len(), lo)
	}
	return trainToks, val, nil
}

// Build makes the model (unless Setup loaded one), the causal-LM task and
// the batches.
func (r *LlamaRecipe) Build(context.Context) (train.Plan, error) {
	cfg := r.cfg
	var err error
	if r.m == nil {
		if r.m, err = llama.NewForCausalLM(cfg.Model, layers.WithSeed(cfg.Seed)); err != nil {
			return train.Plan{}, fmt.Errorf("pretrain: %w", err)
		}
	}
	block := cfg.Block()
	data, err := NewLMData(r.train, r.val, cfg.BatchSize, block, cfg.Seed)
	if err != nil {
		return train.Plan{}, fmt.Errorf("pretrain: %w", err)
	}
	mc := r.m.Config
	return train.Plan{
		Task: &LlamaTask{Model: r.m, Tok: r.tok, B: cfg.BatchSize, T: block, From: cfg.InitFrom}, Data: data, DefaultSchedule: "cosine",
		Summary: fmt.Sprintf("%s: %d parameters, %d layers, %d query and %d key-value heads, %d wide (SwiGLU %d), block %d; %d training and %d validation tokens (vocabulary %d)",
			mc.ModelType, r.m.NumParams(), mc.NumHiddenLayers, mc.NumAttentionHeads, mc.KVHeads(), mc.HiddenSize, mc.IntermediateSize, block, r.train.Len(), r.val.Len(), r.tok.VocabSize()),
	}, nil
}

// Finish works out the validation loss in bits per character and
// generates the samples.
func (r *LlamaRecipe) Finish(ctx context.Context, _ *train.Trainer, res train.Result, out io.Writer) error {
	t := r.cfg.Block()
	windows := (r.val.Len() - 1) / t
	r.ValTokens = windows * t
	all, err := r.val.IDs(0, r.ValTokens+1)
	if err != nil {
		return err
	}
	whole, err := r.tok.Decode(all)
	if err != nil {
		return fmt.Errorf("pretrain: validation text: %w", err)
	}
	first, err := r.tok.Decode(all[:1]) // an input, never a target
	if err != nil {
		return fmt.Errorf("pretrain: validation text: %w", err)
	}
	r.ValChars = utf8.RuneCountInString(whole) - utf8.RuneCountInString(first)
	if r.ValChars > 0 {
		r.BitsPerChar = res.ValLoss * float64(r.ValTokens) / float64(r.ValChars) / math.Ln2
		fmt.Fprintf(out, "validation: %.4f nats per token over %d tokens of %d characters: %.4f bits per character\n", res.ValLoss, r.ValTokens, r.ValChars, r.BitsPerChar)
	}
	r.Samples, err = llamaSamples(ctx, r.m, r.tok, r.cfg)
	return err
}

// llamaSamples generates cfg.Samples texts from a newline, sampling at
// temperature 0.8, each at most cfg.SampleLen tokens and no longer than
// the model's context. Data-parallel ranks other than 0, which print
// nothing, generate none.
func llamaSamples(ctx context.Context, m *llama.ForCausalLM, tok datasets.Tokenizer, cfg LlamaConfig) ([]string, error) {
	if cfg.Samples == 0 || cfg.SampleLen == 0 || !train.Leader() {
		return nil, nil
	}
	prompt, err := tok.Encode("\n")
	if err != nil || len(prompt) == 0 {
		prompt = []int{0}
	}
	if b := m.Config.BOSTokenID; b != nil {
		prompt = append([]int{*b}, prompt...)
	}
	n := min(cfg.SampleLen, m.Config.MaxPositionEmbeddings-len(prompt))
	if w := m.Config.Window(); w > 0 {
		n = min(n, w-len(prompt))
	}
	if n <= 0 {
		return nil, nil
	}
	var out []string
	for i := 0; i < cfg.Samples; i++ {
		if err := ctx.Err(); err != nil {
			return out, nil // interrupted after training: the samples are a courtesy
		}
		gen, err := m.Generate([][]int{prompt}, llama.GenerateConfig{SampleConfig: decode.Sampling(n, 0.8, cfg.Seed+uint64(i))})
		if err != nil {
			return nil, err
		}
		text, err := tok.Decode(gen[0])
		if err != nil {
			return nil, err
		}
		out = append(out, text)
	}
	return out, nil
}
