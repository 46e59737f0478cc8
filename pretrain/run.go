package pretrain

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/runinfo"
	"github.com/d73a19ff/zoo/models/gpt"
)

// gptRecord is what run.json records of a GPT run: the corpus's size and
// content hash (not its path, so that a moved corpus is the same corpus),
// the tokenizer settings and the model config as given (vocab_size comes
// from the tokenizer). Hashing reads the corpus once; ctx stops it.
func gptRecord(ctx context.Context, cfg GPTConfig, c *datasets.Corpus) (runinfo.Record, error) {
	r, err := corpusRecord(ctx, c)
	if err != nil {
		return nil, err
	}
	trained := ""
	switch cfg.Tokenizer {
	case "bpe":
		trained = fmt.Sprintf("bpe of %d tokens", cfg.BPEVocab)
	case "char":
		trained = "char"
	}
	if err := setTokenizer(r, cfg.InitFrom, cfg.Tokenizer, trained); err != nil {
		return nil, err
	}
	if err := r.SetFields("model.", cfg.Model, "vocab_size"); err != nil {
		return nil, err
	}
	return r, nil
}

// corpusRecord starts a run.json record with the corpus's size and
// content hash (not its path, so that a moved corpus is the same corpus).
// Hashing reads the corpus once; ctx stops it.
func corpusRecord(ctx context.Context, c *datasets.Corpus) (runinfo.Record, error) {
	h := sha256.New()
	if err := c.EachContext(ctx, func(text string) error {
		_, err := io.WriteString(h, text)
		return err
	}); err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	r := runinfo.Record{}
	if err := r.Set("corpus", fmt.Sprintf("%d bytes in %d file(s), sha256 %x", c.Size(), len(c.Files()), h.Sum(nil))); err != nil {
		return nil, err
	}
	return r, nil
}

// setTokenizer records a run's tokenizer: the init_from checkpoint's, one
// trained on the corpus (trained describes it: its settings), or a file
// (its path and content hash; a bad path is the tokenizer loader's error to
// report).
func setTokenizer(r runinfo.Record, initFrom, tokenizer, trained string) error {
	tok := tokenizer
	switch {
	case initFrom != "":
		tok = runinfo.InitFromPrefix + initFrom
	case trained != "":
		tok = trained
	default:
		if b, err := os.ReadFile(tok); err == nil {
			tok = fmt.Sprintf("%s (sha256 %x)", tok, sha256.Sum256(b))
		}
	}
	return r.Set("tokenizer", tok)
}

// initFromModel loads the GPT checkpoint in dir with the dropout rates
// (resid_pdrop, embd_pdrop, attn_pdrop) that the config file's model block
// written sets, to given's values, in place of the checkpoint's, each
// change said on out: regularisation, not architecture, as nanoGPT's
// override_args. The block's other keys are the checkpoint's (modelNotice
// names them).
func initFromModel(dir string, given gpt.Config, written json.RawMessage, out io.Writer) (*gpt.Model, error) {
	var keys map[string]json.RawMessage
	if len(written) > 0 {
		if err := json.Unmarshal(written, &keys); err != nil {
			return nil, fmt.Errorf("config: model: %w", err)
		}
	}
	m, _, err := gpt.LoadEdited(dir, func(c *gpt.Config) error {
		for _, f := range []struct {
			key       string
			ckpt, now *float64
		}{{"resid_pdrop", &c.ResidPdrop, &given.ResidPdrop}, {"embd_pdrop", &c.EmbdPdrop, &given.EmbdPdrop}, {"attn_pdrop", &c.AttnPdrop, &given.AttnPdrop}} {
			if _, ok := keys[f.key]; ok && *f.now != *f.ckpt {
				fmt.Fprintf(out, "init_from: model.%s %g, the config's, replaces the checkpoint's %g\n", f.key, *f.now, *f.ckpt)
				*f.ckpt = *f.now
			}
		}
		return nil
	})
	return m, err
}

// modelNotice names each model field that the config gives and that
// differs from the checkpoint's, which fine-tuning uses instead; it is
// empty when there is none. A field is given when the config file's model
// block (written, as DecodeGPTConfig keeps it) has its key, whatever its
// value: one equal to DefaultGPT's is as much the user's as any other.
// Without a block (a config built in Go), a field is given when it differs
// from DefaultGPT's. The dropout rates the block writes are taken
// (initFromModel), so they equal the checkpoint's and are not named.
func modelNotice(given, ckpt gpt.Config, written json.RawMessage) string {
	return notUsed(given, ckpt, DefaultGPT().Model, written, "vocab_size")
}

// notUsed is modelNotice for any family's model config: given, the
// checkpoint's ckpt and the pipeline's default def, all of one type whose
// JSON is a Hugging Face config.json; the fields named in skip are never
// noted (those the tokenizer sets).
func notUsed(given, ckpt, def any, written json.RawMessage, skip ...string) string {
	fields := func(c any) map[string]json.RawMessage {
		r := runinfo.Record{}
		if err := r.SetFields("", c); err != nil {
			return nil
		}
		out := map[string]json.RawMessage{}
		for k, v := range r {
			out[k] = json.RawMessage(v)
		}
		return out
	}
	var keys map[string]json.RawMessage
	if len(written) > 0 && json.Unmarshal(written, &keys) != nil {
		keys = nil
	}
	g, c, d := fields(given), fields(ckpt), fields(def)
	var names []string
	for k, v := range g {
		_, inBlock := keys[k]
		isGiven := inBlock || string(v) != string(d[k])
		if !slices.Contains(skip, k) && isGiven && string(v) != string(c[k]) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var sb strings.Builder
	for _, k := range names {
		cv := string(c[k])
		if cv == "" {
			cv = "(none)"
		}
		fmt.Fprintf(&sb, "init_from: the config's model.%s %s is not used: the checkpoint's architecture wins, with %s\n", k, g[k], cv)
	}
	return sb.String()
}

// chooseTokenizer is datasets.ChooseTokenizer for "char" or a
// tokenizer.json, returning as soon as ctx is done. Counting the
// characters of a 40 MB corpus takes over a second and
// datasets.NewCharTokenizer takes no context, so it runs in a goroutine
// that, on an interrupt, is left to finish on its own (its result is
// dropped).
func chooseTokenizer(ctx context.Context, cfg GPTConfig, c *datasets.Corpus) (datasets.Tokenizer, error) {
	type result struct {
		tok datasets.Tokenizer
		err error
	}
	done := make(chan result, 1)
	go func() {
		tok, err := datasets.ChooseTokenizer(cfg.Tokenizer, c, cfg.BPEVocab)
		done <- result{tok, err}
	}()
	select {
	case r := <-done:
		return r.tok, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("pretrain: tokenizer: %w", ctx.Err())
	}
}
