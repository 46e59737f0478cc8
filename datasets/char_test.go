package datasets

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCharTokenizer(t *testing.T) {
	tok, err := NewCharTokenizer(openText(t, "hello world\n"))
	require.NoError(t, err)
	// [UNK], then sorted by code point: \n, space, d, e, h, l, o, r, w.
	assert.Equal(t, 10, tok.VocabSize())
	ids, err := tok.Encode("hello")
	require.NoError(t, err)
	assert.Equal(t, []int{5, 4, 6, 6, 7}, ids)
	text, err := tok.Decode([]int{9, 7, 8, 6, 3, 1})
	require.NoError(t, err)
	assert.Equal(t, "world\n", text)

	// Characters the corpus lacked are [UNK], counted.
	u, ok := tok.(UnknownCounter)
	require.True(t, ok)
	assert.Equal(t, 0, u.Unknown())
	ids, err = tok.Encode("held!\t🙂")
	require.NoError(t, err)
	assert.Equal(t, []int{5, 4, 6, 3, CharUnknownID, CharUnknownID, CharUnknownID}, ids)
	assert.Equal(t, 3, u.Unknown())
	_, err = tok.Encode("!")
	require.NoError(t, err)
	assert.Equal(t, 4, u.Unknown(), "a running total")
	text, err = tok.Decode(ids)
	require.NoError(t, err)
	assert.Equal(t, "held[UNK][UNK][UNK]", text, "[UNK] is written, not dropped")

	_, err = tok.Decode([]int{10})
	assert.ErrorContains(t, err, "outside [0, 10)")
	_, err = tok.Decode([]int{-1})
	assert.Error(t, err)
}

// zooChar is "hello world\n"'s character tokenizer as zoo saved it before
// tokenizers had [UNK] (checkpoints exist in this format).
const zooChar = `{"type":"zoo-char","version":1,"chars":["\n"," ","d","e","h","l","o","r","w"]}`

func TestCharTokenizerZooCharFormat(t *testing.T) {
	path := writeFile(t, t.TempDir(), "tokenizer.json", zooChar)
	tok, err := LoadTokenizer(path)
	require.NoError(t, err)
	// As before: no [UNK], so ids from 0 and an unknown character is an
	// error.
	assert.Equal(t, 9, tok.VocabSize())
	ids, err := tok.Encode("hello")
	require.NoError(t, err)
	assert.Equal(t, []int{4, 3, 5, 5, 6}, ids)
	text, err := tok.Decode([]int{8, 6, 7, 5, 2, 0})
	require.NoError(t, err)
	assert.Equal(t, "world\n", text)
	_, err = tok.Encode("held!")
	assert.ErrorContains(t, err, `character '!' at byte offset 4 is not in the vocabulary`)
	assert.Equal(t, 0, tok.(UnknownCounter).Unknown())
	_, err = tok.Decode([]int{9})
	assert.ErrorContains(t, err, "outside [0, 9)")

	// It saves in its own format, byte for byte, so token caches keyed by
	// it stay valid.
	raw, err := tok.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, zooChar, string(raw))
	out := filepath.Join(t.TempDir(), "again.json")
	require.NoError(t, tok.Save(out))
	again, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, zooChar, string(again))
}

func TestCharTokenizerOpticks(t *testing.T) {
	text := opticks(t)
	c, err := OpenCorpus(opticksPath(t), CorpusOptions{})
	require.NoError(t, err)
	tok, err := NewCharTokenizer(c)
	require.NoError(t, err)
	ids, err := tok.Encode(text)
	require.NoError(t, err)
	assert.NotContains(t, ids, CharUnknownID)
	back, err := tok.Decode(ids)
	require.NoError(t, err)
	assert.Equal(t, text, back)
	assert.Less(t, tok.VocabSize(), 256, "Opticks has fewer than 256 distinct characters")
}

func TestCharTokenizerSaveLoad(t *testing.T) {
	tok, err := NewCharTokenizer(openText(t, "naïve 🙂 <tag> \"q\"\t\n"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "chars.json")
	require.NoError(t, tok.Save(path))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// A Hugging Face tokenizer.json: a BPE with no merges, whose vocabulary
	// is [UNK] then the characters, and a Fuse decoder.
	var f struct {
		AddedTokens  []any          `json:"added_tokens"`
		PreTokenizer any            `json:"pre_tokenizer"`
		Decoder      map[string]any `json:"decoder"`
		Model        struct {
			Type     string         `json:"type"`
			UnkToken string         `json:"unk_token"`
			Vocab    map[string]int `json:"vocab"`
			Merges   []string       `json:"merges"`
		} `json:"model"`
	}
	require.NoError(t, json.Unmarshal(raw, &f))
	assert.Equal(t, "BPE", f.Model.Type)
	assert.Equal(t, "[UNK]", f.Model.UnkToken)
	assert.Equal(t, CharUnknownID, f.Model.Vocab["[UNK]"])
	assert.Equal(t, tok.VocabSize(), len(f.Model.Vocab))
	assert.Empty(t, f.Model.Merges)
	assert.Empty(t, f.AddedTokens, "[UNK] is no added token: the text \"[UNK]\" is five characters")
	assert.Nil(t, f.PreTokenizer)
	assert.Equal(t, map[string]any{"type": "Fuse"}, f.Decoder)
	assert.Contains(t, string(raw), `"<"`, "not HTML-escaped")

	loaded, err := LoadTokenizer(path)
	require.NoError(t, err)
	s := "naïve <🙂>\t\"tag\"\n"
	want, err := tok.Encode(s)
	require.NoError(t, err)
	got, err := loaded.Encode(s)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	again, err := loaded.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, raw, again)
	_, isChar := loaded.(*charTokenizer)
	assert.True(t, isChar, "loaded as the character tokenizer it is")

	// Decoded through the file alone (as Hugging Face's tokenizers would),
	// the same ids give the same text, [UNK] included.
	hf, err := parseHF(raw)
	require.NoError(t, err)
	s = "naïve [UNK] ¿x?"
	want, err = tok.Encode(s)
	require.NoError(t, err)
	got, err = hf.Encode(s)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	a, err := tok.Decode(want)
	require.NoError(t, err)
	b, err := hf.Decode(want)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	// The corpus had none of "[UNK]¿x?".
	assert.Equal(t, "naïve "+strings.Repeat("[UNK]", 5)+" "+strings.Repeat("[UNK]", 3), a)
}

func TestCharTokenizerLayoutDetection(t *testing.T) {
	tok, err := NewCharTokenizer(openText(t, "ab"))
	require.NoError(t, err)
	raw, err := tok.MarshalJSON()
	require.NoError(t, err)
	// Any change to the layout makes it a general tokenizer.json.
	for name, edit := range map[string][2]string{
		"merges":         {`"merges": []`, `"merges": ["a b"]`},
		"unk token":      {`"unk_token": "[UNK]"`, `"unk_token": "a"`},
		"decoder":        {`"type": "Fuse"`, `"type": "ByteLevel"`},
		"fuse_unk":       {`"fuse_unk": false`, `"fuse_unk": true`},
		"[UNK] not at 0": {`"[UNK]": 0,`, `"[UNK]": 3,`},
	} {
		changed := strings.Replace(string(raw), edit[0], edit[1], 1)
		require.NotEqual(t, string(raw), changed, name)
		if name == "merges" {
			changed = strings.Replace(changed, `"b": 2`, `"b": 2, "ab": 3`, 1)
		}
		_, ok := parseCharHF([]byte(changed))
		assert.False(t, ok, name)
	}
	_, ok := parseCharHF(raw)
	assert.True(t, ok)
}

func TestCharTokenizerReplacementCharacter(t *testing.T) {
	c, err := OpenCorpus(writeFile(t, t.TempDir(), "a.txt", "ab\xff"), CorpusOptions{ReplaceInvalid: true})
	require.NoError(t, err)
	tok, err := NewCharTokenizer(c)
	require.NoError(t, err)
	ids, err := tok.Encode("b\uFFFD")
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3}, ids)
}

// A pipeline reports the characters its texts had that the vocabulary
// lacks.
func ExampleUnknownCounter() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "corpus.txt")
	_ = os.WriteFile(path, []byte("the prism refracts the light\n"), 0o644)
	c, err := OpenCorpus(path, CorpusOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := NewCharTokenizer(c)
	if err != nil {
		fmt.Println(err)
		return
	}

	u, counts := tok.(UnknownCounter)
	before := 0
	if counts {
		before = u.Unknown()
	}
	ids, err := tok.Encode("the\tprism, 2nd")
	if err != nil {
		fmt.Println(err)
		return
	}
	if counts && u.Unknown() > before {
		fmt.Printf("%d characters were not in the vocabulary (mapped to %s)\n", u.Unknown()-before, CharUnknown)
	}
	text, _ := tok.Decode(ids)
	fmt.Println(text)
	// Output:
	// 5 characters were not in the vocabulary (mapped to [UNK])
	// the[UNK]prism[UNK] [UNK][UNK][UNK]
}
