package pretrain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/train"
)

// This file is the LLaMA family's causal-LM objective for the training
// engine (train.Task): what pretraining, LM fine-tuning (init_from) and
// resuming share. Its batches are GPT's (LMData, Windows): (B, T) windows
// and their next-token targets.

// TokenizerConfigFile is the tokenizer settings file of a Hugging Face
// checkpoint, which LlamaTask writes beside tokenizer.json.
const TokenizerConfigFile = "tokenizer_config.json"

// LlamaTask is the causal-LM objective of a LLaMA-family model on (B, T)
// windows, for the engine. Its checkpoints are Hugging Face
// LlamaForCausalLM folders: config.json, model.safetensors,
// generation_config.json, tokenizer.json and tokenizer_config.json. The
// last two settings files are From's, byte for byte, when it has them (a
// checkpoint fine-tuned keeps its own), else written from the model's
// token ids.
type LlamaTask struct {
	Model *llama.ForCausalLM
	Tok   datasets.Tokenizer
	B, T  int
	// From is the checkpoint the run started from (init_from), "" for a
	// new model.
	From string
}

// Store implements train.Task.
func (k *LlamaTask) Store() *layers.Store { return k.Model.Store }

// Decay implements train.Decayer: the model's own rule (matrices but the
// token embedding).
func (k *LlamaTask) Decay(name string, shape []int) bool { return k.Model.Decay(name, shape) }

// Loss implements train.Task.
func (k *LlamaTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	ids, targets := g.IntInput("input_ids", k.B, k.T), g.IntInput("labels", k.B, k.T)
	loss, _, err := k.Model.Loss(g, llama.Inputs{IDs: ids}, targets)
	load := func(b train.Batch) error {
		lb, ok := b.(lmBatch)
		if !ok || len(lb.ids) != k.B*k.T {
			return fmt.Errorf("llama: a batch of %T does not fit the (%d, %d) graph", b, k.B, k.T)
		}
		copy(ids.Value().Data().([]int), lb.ids)
		copy(targets.Value().Data().([]int), lb.targets)
		return nil
	}
	return loss, load, err
}

// Save implements train.Task: the model, tokenizer.json,
// generation_config.json and tokenizer_config.json.
func (k *LlamaTask) Save(dir string) error {
	if err := models.SaveText(dir, k.Model, k.Tok); err != nil {
		return err
	}
	gen, tc, err := k.settings()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, decode.GenerationFile), gen); err != nil {
		return fmt.Errorf("save checkpoint %s: %w", dir, err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, TokenizerConfigFile), tc); err != nil {
		return fmt.Errorf("save checkpoint %s: %w", dir, err)
	}
	return nil
}

// Load implements train.Task.
func (k *LlamaTask) Load(dir string) error {
	return models.LoadInto(dir, k.Model)
}

// settings are the generation_config.json and tokenizer_config.json to
// write: From's when it has them, else the model's token ids as
// transformers writes them.
func (k *LlamaTask) settings() (gen, tc []byte, err error) {
	c := k.Model.Config
	if gen, err = fromFile(k.From, decode.GenerationFile); err == nil && gen == nil {
		g := map[string]any{}
		if c.BOSTokenID != nil {
			g["bos_token_id"] = *c.BOSTokenID
		}
		if c.EOSTokenID != nil {
			g["eos_token_id"] = c.EOSTokenID
		}
		if c.PadTokenID != nil {
			g["pad_token_id"] = *c.PadTokenID
		}
		gen, err = indentJSON(g)
	}
	if err != nil {
		return nil, nil, err
	}
	if tc, err = fromFile(k.From, TokenizerConfigFile); err == nil && tc == nil {
		tc, err = k.tokenizerConfig()
	}
	return gen, tc, err
}

// tokenizerConfig is a tokenizer_config.json for tokenizer.json: its
// special tokens by name (those of the model's ids), the context, and
// PreTrainedTokenizerFast, the class that reads any tokenizer.json.
func (k *LlamaTask) tokenizerConfig() ([]byte, error) {
	c := k.Model.Config
	tc := map[string]any{
		"tokenizer_class":              "PreTrainedTokenizerFast",
		"model_max_length":             c.MaxPositionEmbeddings,
		"clean_up_tokenization_spaces": false,
	}
	name := func(id *int) (string, bool) {
		if id == nil {
			return "", false
		}
		s, err := k.Tok.Decode([]int{*id})
		return s, err == nil && s != ""
	}
	if s, ok := name(c.BOSTokenID); ok {
		tc["bos_token"] = s
	}
	if eos := c.EOS(); len(eos) > 0 {
		if s, ok := name(&eos[0]); ok {
			tc["eos_token"] = s
		}
	}
	if s, ok := name(c.PadTokenID); ok {
		tc["pad_token"] = s
	}
	if _, ok := specialID(k.Tok, "<unk>"); ok {
		tc["unk_token"] = "<unk>"
	}
	return indentJSON(tc)
}

// indentJSON writes v as transformers writes its settings files: indented
// by two spaces, "<s>" as it is (not \u003cs\u003e), a newline at the end.
func indentJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	return b.Bytes(), nil
}

// fromFile reads dir/name; nil when dir is "" or has no such file.
func fromFile(dir, name string) ([]byte, error) {
	if dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	return b, nil
}

// specialID is the id of the special token s in tok: the one id s
// encodes to, which decodes back to s. A tokenizer without it (a
// character tokenizer encodes "<s>" as three ids) has none.
func specialID(tok datasets.Tokenizer, s string) (int, bool) {
	ids, err := tok.Encode(s)
	if err != nil || len(ids) != 1 {
		return 0, false
	}
	if d, err := tok.Decode(ids); err != nil || d != s {
		return 0, false
	}
	return ids[0], true
}
