package bert

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/models"
)

// tokenizerConfig is the tokenizer_config.json that transformers'
// save_pretrained writes beside tokenizer.json for the model type's fast
// tokenizer, which sentence-transformers' Transformer module loads with
// AutoTokenizer.from_pretrained: the class (BertTokenizer,
// DistilBertTokenizer, RobertaTokenizer: AutoTokenizer takes its Fast
// version, which reads tokenizer.json), the special tokens, the
// WordPiece's lowercasing and accent stripping as its normalizer has them,
// and model_max_length, the most tokens the model takes.
func tokenizerConfig(c Config, tok datasets.Tokenizer) (map[string]any, error) {
	v := c.variant()
	tc := map[string]any{"model_max_length": c.MaxTokens(), "clean_up_tokenization_spaces": false}
	if v.wordPiece {
		raw, err := tok.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var f struct {
			Normalizer *struct {
				Lowercase    *bool `json:"lowercase"`
				StripAccents *bool `json:"strip_accents"`
				Chinese      *bool `json:"handle_chinese_chars"`
			} `json:"normalizer"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, err
		}
		lower, chinese := false, true
		var strip any // null: follow lowercase, as BertTokenizer's default
		if n := f.Normalizer; n != nil {
			if n.Lowercase != nil {
				lower = *n.Lowercase
			}
			if n.StripAccents != nil {
				strip = *n.StripAccents
			}
			if n.Chinese != nil {
				chinese = *n.Chinese
			}
		}
		for k, x := range map[string]any{"tokenizer_class": v.class + "Tokenizer", "do_lower_case": lower, "strip_accents": strip,
			"tokenize_chinese_chars": chinese, "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]", "mask_token": MaskToken} {
			tc[k] = x
		}
		return tc, nil
	}
	for k, x := range map[string]any{"tokenizer_class": "RobertaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "cls_token": "<s>", "sep_token": "</s>",
		"unk_token": "<unk>", "pad_token": "<pad>", "mask_token": RobertaMaskToken, "add_prefix_space": false, "trim_offsets": true, "errors": "replace"} {
		tc[k] = x
	}
	return tc, nil
}

// writeTokenizerConfig writes dir/tokenizer_config.json for c and tok.
func writeTokenizerConfig(dir string, c Config, tok datasets.Tokenizer) error {
	tc, err := tokenizerConfig(c, tok)
	if err != nil {
		return fmt.Errorf("bert: save sentence embeddings: %s: %w", models.TokenizerConfigFile, err)
	}
	b, err := json.MarshalIndent(tc, "", "  ")
	if err != nil {
		return fmt.Errorf("bert: save sentence embeddings: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, models.TokenizerConfigFile), append(b, '\n')); err != nil {
		return fmt.Errorf("bert: save sentence embeddings: %w", err)
	}
	return nil
}
