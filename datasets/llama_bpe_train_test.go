package datasets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// llamaTrainHF is testdata/llama_bpe_train_hf.json, written by
// tools/hftokenizers/llama_train.js: the vocabulary and merges tokenizers'
// BpeTrainer (npm tokenizers 0.23.2) learns on Opticks with
// TrainLlamaBPE's settings, cut to 8000 tokens, and the ids tokenizers
// gives with them.
type llamaTrainHF struct {
	Tokenizers   string      `json:"tokenizers"`
	VocabSize    int         `json:"vocab_size"`
	Alphabet     int         `json:"alphabet"`
	Merges       int         `json:"merges"`
	VocabSHA256  string      `json:"vocab_sha256"`
	MergesSHA256 string      `json:"merges_sha256"`
	FirstMerges  [][2]string `json:"first_merges"`
	LastMerges   [][2]string `json:"last_merges"`
	Texts        []struct {
		Text       string `json:"text"`
		IDs        []int  `json:"ids"`
		IDsSpecial []int  `json:"ids_special"`
	} `json:"texts"`
	Opticks struct {
		Bytes  int    `json:"bytes"`
		IDs    int    `json:"ids"`
		SHA256 string `json:"sha256"`
		Head   []int  `json:"head"`
	} `json:"opticks"`
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// trainedModel returns the vocabulary (index = id) and merges of a
// tokenizer.json.
func trainedModel(t testing.TB, tok Tokenizer) ([]string, [][2]string) {
	t.Helper()
	raw, err := tok.MarshalJSON()
	require.NoError(t, err)
	var f struct {
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	require.NoError(t, json.Unmarshal(raw, &f))
	vocab := make([]string, len(f.Model.Vocab))
	for s, id := range f.Model.Vocab {
		require.Less(t, id, len(vocab))
		vocab[id] = s
	}
	return vocab, f.Model.Merges
}

// TestTrainLlamaBPEMatchesHuggingFace trains 8000 tokens on Opticks and
// checks the vocabulary and the merges, in order, against tokenizers'
// BpeTrainer's (by their sha256, count, first and last), and the ids of
// a few texts and of all of Opticks against tokenizers' encoding with
// its own result. With ZOO_LLAMA_TRAIN_OUT set, it saves the tokenizer
// there for llama_train.js to load in tokenizers.
func TestTrainLlamaBPEMatchesHuggingFace(t *testing.T) {
	raw, err := os.ReadFile("testdata/llama_bpe_train_hf.json")
	require.NoError(t, err)
	var hf llamaTrainHF
	require.NoError(t, json.Unmarshal(raw, &hf))
	c, err := OpenCorpus(opticksPath(t), CorpusOptions{})
	require.NoError(t, err)
	// tokenizers' trainer has no length limit (max_token_length None).
	tok, err := TrainLlamaBPE(context.Background(), c, LlamaBPEOptions{VocabSize: 8000, MaxPieceLength: -1})
	require.NoError(t, err)
	if out := os.Getenv("ZOO_LLAMA_TRAIN_OUT"); out != "" {
		require.NoError(t, tok.Save(out))
	}
	vocab, merges := trainedModel(t, tok)
	assert.Equal(t, hf.VocabSize, len(vocab))
	assert.Equal(t, hf.VocabSize, tok.VocabSize())
	assert.Equal(t, hf.Merges, len(merges))
	assert.Equal(t, hf.Alphabet, len(vocab)-259-len(merges))
	require.GreaterOrEqual(t, len(merges), len(hf.FirstMerges))
	assert.Equal(t, hf.FirstMerges, merges[:len(hf.FirstMerges)])
	assert.Equal(t, hf.LastMerges, merges[len(merges)-len(hf.LastMerges):])
	assert.Equal(t, hf.VocabSHA256, sha256Hex(strings.Join(vocab, "\n")), "vocabulary")
	joined := make([]string, len(merges))
	for i, m := range merges {
		joined[i] = m[0] + " " + m[1]
	}
	assert.Equal(t, hf.MergesSHA256, sha256Hex(strings.Join(joined, "\n")), "merges")

	h, ok := tok.(*hfTemplated)
	require.True(t, ok, "got %T", tok)
	require.True(t, h.native)
	for _, c := range hf.Texts {
		ids, err := tok.Encode(c.Text)
		require.NoError(t, err)
		assert.Equal(t, c.IDs, ids, "%q", c.Text)
		ids, _, err = h.EncodeWithSpecials(c.Text)
		require.NoError(t, err)
		assert.Equal(t, c.IDsSpecial, ids, "%q with <s>", c.Text)
	}
	text := opticks(t)
	require.Equal(t, hf.Opticks.Bytes, len(text))
	ids, err := tok.Encode(text)
	require.NoError(t, err)
	assert.Equal(t, hf.Opticks.IDs, len(ids))
	assert.Equal(t, hf.Opticks.Head, ids[:len(hf.Opticks.Head)])
	assert.Equal(t, hf.Opticks.SHA256, idsHash(ids), "the ids of Opticks differ from tokenizers'")
	back, err := tok.Decode(ids)
	require.NoError(t, err)
	assert.Equal(t, text, back)
}
