package bert

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
)

// The files of a sentence-transformers folder as SentenceTransformer.save
// writes them (sentence-transformers' Transformer.save: the model's
// save_pretrained, the tokenizer's save_pretrained and
// sentence_bert_config.json; Pooling.save; SentenceTransformer.save's
// modules.json and config_sentence_transformers.json), less the files
// zoo does not write: README.md, special_tokens_map.json and vocab.txt
// (the fast tokenizer reads tokenizer.json; tokenizer_config.json holds
// the special tokens).
var stFiles = []string{"1_Pooling/config.json", "config.json", "config_sentence_transformers.json", "model.safetensors", "modules.json",
	"sentence_bert_config.json", "tokenizer.json", "tokenizer_config.json"}

// For BERT, DistilBERT and RoBERTa encoders, Save writes every file
// sentence-transformers loads, tokenizer_config.json with the model type's
// tokenizer class, special tokens and limits; and a saved folder round-trips:
// loaded and saved again it gives the same files byte for byte and the
// same embeddings.
func TestSentenceEmbeddingsSaveRoundTrip(t *testing.T) {
	bertDirs, _ := predictCheckpoints(t)
	distilDirs, _ := distilCheckpoints(t)
	robertaDirs, _ := robertaCheckpoints(t)
	for _, c := range []struct {
		name, dir string
		want      map[string]any
	}{
		{"bert", bertDirs["base"], map[string]any{"tokenizer_class": "BertTokenizer", "do_lower_case": true, "cls_token": "[CLS]", "mask_token": "[MASK]", "model_max_length": 24.0}},
		{"distilbert", distilDirs["base"], map[string]any{"tokenizer_class": "DistilBertTokenizer", "do_lower_case": true, "sep_token": "[SEP]", "pad_token": "[PAD]", "model_max_length": 24.0}},
		{"roberta", robertaDirs["base"], map[string]any{"tokenizer_class": "RobertaTokenizer", "bos_token": "<s>", "mask_token": "<mask>", "pad_token": "<pad>",
			"add_prefix_space": false, "trim_offsets": true, "model_max_length": 24.0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := stFolder(t, c.dir, MeanPooling(0), false)
			var files []string
			require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(dir, p)
					files = append(files, filepath.ToSlash(rel))
				}
				return err
			}))
			slices.Sort(files)
			require.Equal(t, stFiles, files)
			b, err := os.ReadFile(filepath.Join(dir, models.TokenizerConfigFile))
			require.NoError(t, err)
			var tc map[string]any
			require.NoError(t, json.Unmarshal(b, &tc))
			for k, v := range c.want {
				require.Equal(t, v, tc[k], k)
			}

			s, err := LoadSentenceEmbeddings(dir)
			require.NoError(t, err)
			again := t.TempDir()
			require.NoError(t, s.Save(again))
			for _, f := range stFiles {
				a, err := os.ReadFile(filepath.Join(dir, f))
				require.NoError(t, err)
				b, err := os.ReadFile(filepath.Join(again, f))
				require.NoError(t, err)
				require.Equal(t, string(a), string(b), f)
			}
			back, err := LoadSentenceEmbeddings(again)
			require.NoError(t, err)
			want, err := s.Embed(context.Background(), predictTexts)
			require.NoError(t, err)
			got, err := back.Embed(context.Background(), predictTexts)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}
