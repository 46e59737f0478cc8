package datasets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// llamaTrainHF is testdata/llama_bpe_train_hf.json, written by
// tools/hftokenizers/llama_train.js: the vocabulary and merges tokenizers'
// BpeTrainer (npm tokenizers 0.23.2) learns on Opticks with
// TrainLlamaBPE's settings, cut to 8000 tokens, and the ids tokenizers
// gives with them.
type llamaTrainHF struct {
	Tokenizers   string            `json:"tokenizers"`
	VocabSize    int               `json:"vocab_size"`
	Alphabet     int               `json:"alphabet"`
	Merges       int               `json:"merges"`
	VocabSHA256  string            `json:"vocab_sha256"`
	MergesSHA256 string            `json:"merges_sha256"`
	FirstMerges  [][2]string       `json:"first_merges"`
	LastMerges   [][2]string       `json:"last_merges"`
	Texts        []llamaTrainText  `json:"texts"`
	Opticks      llamaTrainOpticks `json:"opticks"`
	// ZooDefaults holds tokenizers' ids with the tokenizer TrainLlamaBPE
	// learns with its defaults.
	ZooDefaults struct {
		VocabSize int               `json:"vocab_size"`
		Merges    int               `json:"merges"`
		Texts     []llamaTrainText  `json:"texts"`
		Opticks   llamaTrainOpticks `json:"opticks"`
	} `json:"zoo_defaults"`
}

type llamaTrainText struct {
	Text       string `json:"text"`
	IDs        []int  `json:"ids"`
	IDsSpecial []int  `json:"ids_special"`
}

type llamaTrainOpticks struct {
	Bytes  int    `json:"bytes"`
	IDs    int    `json:"ids"`
	SHA256 string `json:"sha256"`
	Head   []int  `json:"head"`
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

// TestTrainLlamaBPEMatchesHuggingFace trains 8000 tokens on Opticks
// with tokenizers' settings and checks the vocabulary and the merges, in
// order, against tokenizers' BpeTrainer's (by their sha256, count, first
// and last), and the ids of a few texts and of all of Opticks against
// tokenizers' encoding with its own result; then trains with the
// defaults and checks the ids against tokenizers' with zoo's file. With
// ZOO_LLAMA_TRAIN_OUT set to a folder, it saves the two tokenizers there
// (hf-settings.json, defaults.json) for llama_train.js.
func TestTrainLlamaBPEMatchesHuggingFace(t *testing.T) {
	raw, err := os.ReadFile("testdata/llama_bpe_train_hf.json")
	require.NoError(t, err)
	var hf llamaTrainHF
	require.NoError(t, json.Unmarshal(raw, &hf))
	c, err := OpenCorpus(opticksPath(t), CorpusOptions{})
	require.NoError(t, err)
	out := os.Getenv("ZOO_LLAMA_TRAIN_OUT")
	if out != "" {
		require.NoError(t, os.MkdirAll(out, 0o755))
	}
	// tokenizers' trainer has no length limit (max_token_length None),
	// merges digits and keeps every character.
	tok, err := TrainLlamaBPE(context.Background(), c, LlamaBPEOptions{VocabSize: 8000, MaxPieceLength: -1, MergeDigits: true, CharacterCoverage: 1})
	require.NoError(t, err)
	if out != "" {
		require.NoError(t, tok.Save(filepath.Join(out, "hf-settings.json")))
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
	checkLlamaTrainIDs(t, tok, hf.Texts, hf.Opticks)

	tok, err = TrainLlamaBPE(context.Background(), c, LlamaBPEOptions{VocabSize: 8000})
	require.NoError(t, err)
	if out != "" {
		require.NoError(t, tok.Save(filepath.Join(out, "defaults.json")))
	}
	vocab, merges = trainedModel(t, tok)
	assert.Equal(t, hf.ZooDefaults.VocabSize, len(vocab))
	assert.Equal(t, hf.ZooDefaults.Merges, len(merges))
	checkLlamaTrainIDs(t, tok, hf.ZooDefaults.Texts, hf.ZooDefaults.Opticks)
}

// checkLlamaTrainIDs checks tok's ids, with and without the template's
// <s>, against tokenizers', and those of all of Opticks by their hash.
func checkLlamaTrainIDs(t *testing.T, tok Tokenizer, texts []llamaTrainText, want llamaTrainOpticks) {
	t.Helper()
	h, ok := tok.(*hfTemplated)
	require.True(t, ok, "got %T", tok)
	require.True(t, h.native)
	require.NotEmpty(t, texts)
	for _, c := range texts {
		ids, err := tok.Encode(c.Text)
		require.NoError(t, err)
		assert.Equal(t, c.IDs, ids, "%q", c.Text)
		ids, _, err = h.EncodeWithSpecials(c.Text)
		require.NoError(t, err)
		assert.Equal(t, c.IDsSpecial, ids, "%q with <s>", c.Text)
	}
	text := opticks(t)
	require.Equal(t, want.Bytes, len(text))
	ids, err := tok.Encode(text)
	require.NoError(t, err)
	assert.Equal(t, want.IDs, len(ids))
	assert.Equal(t, want.Head, ids[:len(want.Head)])
	assert.Equal(t, want.SHA256, idsHash(ids), "the ids of Opticks differ from tokenizers'")
	back, err := tok.Decode(ids)
	require.NoError(t, err)
	assert.Equal(t, text, back)
}

// referenceLlamaBPE learns the merges of the words TrainLlamaBPE counts
// with learnMerges (TrainBPE's loop, which scans whole words and is
// checked against tokenizers by TestBPEMergeOrderMatchesHuggingFace).
func referenceLlamaBPE(t *testing.T, texts []string, vocabSize, minCount int) ([]string, [][2]string) {
	t.Helper()
	specials := []string{"<unk>", "<s>", "</s>"}
	counts, err := llamaWords(context.Background(), textList(texts), specials)
	require.NoError(t, err)
	vocab := slices.Clone(specials)
	for b := range 256 {
		vocab = append(vocab, fmt.Sprintf("<0x%02X>", b))
	}
	var runes []rune
	for w := range counts {
		for _, r := range w {
			if !slices.Contains(runes, r) {
				runes = append(runes, r)
			}
		}
	}
	slices.Sort(runes)
	for _, r := range runes {
		vocab = append(vocab, string(r))
	}
	ids := make(map[string]int)
	for i, s := range vocab {
		ids[s] = i
	}
	var words [][]int
	var freq []int
	for w, n := range counts {
		var ws []int
		for _, r := range w {
			ws = append(ws, ids[string(r)])
		}
		words = append(words, ws)
		freq = append(freq, n)
	}
	vocab, merges, err := learnMerges(context.Background(), vocab, ids, words, freq, vocabSize, minCount, func(a, b string) string { return a + b })
	require.NoError(t, err)
	return vocab, merges
}

// TestTrainLlamaBPEMatchesReference checks the indexed merge loop against
// learnMerges, which scans whole words, on random texts over small
// alphabets: runs of one letter ("aaaa", where merges overlap), ties,
// several spaces, lines, digits and characters of several bytes.
func TestTrainLlamaBPEMatchesReference(t *testing.T) {
	for _, seed := range seq(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		alphabet := [][]rune{[]rune("ab"), []rune("ab "), []rune("aab  \n"), []rune("abc a1\t"), []rune("xy日é 😀\n")}[seed%5]
		var texts []string
		for range 1 + r.IntN(4) {
			n := r.IntN(3000)
			s := make([]rune, n)
			for i := range s {
				s[i] = alphabet[r.IntN(len(alphabet))]
			}
			texts = append(texts, string(s))
		}
		vocabSize := 260 + len(alphabet) + r.IntN(200) // learnMerges keeps every character (and "▁")
		minCount := 1 + r.IntN(3)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			want, wantMerges := referenceLlamaBPE(t, texts, vocabSize, minCount)
			m, err := learnLlamaBPE(context.Background(), textList(texts), LlamaBPEOptions{VocabSize: vocabSize, MinFrequency: minCount, MaxPieceLength: -1, MergeDigits: true, CharacterCoverage: 1})
			require.NoError(t, err)
			assert.Equal(t, want, m.vocab)
			assert.Equal(t, wantMerges, m.merges)
		})
	}
}

// TestTrainLlamaBPEOptionErrors checks that bad options are refused
// before training, naming the limits.
func TestTrainLlamaBPEOptionErrors(t *testing.T) {
	c := openText(t, "the cat sat on the mat\n")
	for _, tc := range []struct {
		name string
		opts LlamaBPEOptions
		want string
	}{
		{"no size", LlamaBPEOptions{}, "vocabulary size 0 is outside [259, 16777216]"},
		{"too small", LlamaBPEOptions{VocabSize: 258}, "vocabulary size 258 is outside [259, 16777216]"},
		{"too large", LlamaBPEOptions{VocabSize: MaxLlamaBPEVocab + 1}, "vocabulary size 16777217 is outside [259, 16777216]"},
		{"more specials", LlamaBPEOptions{VocabSize: 259, SpecialTokens: []string{"<unk>", "<s>", "</s>", "<pad>"}}, "outside [260, 16777216]"},
		{"two specials", LlamaBPEOptions{VocabSize: 1000, SpecialTokens: []string{"<unk>", "<s>"}}, "give at least 3"},
		{"repeated special", LlamaBPEOptions{VocabSize: 1000, SpecialTokens: []string{"<unk>", "<s>", "<s>"}}, `special token 2 ("<s>") is empty, repeated`},
		{"empty special", LlamaBPEOptions{VocabSize: 1000, SpecialTokens: []string{"", "<s>", "</s>"}}, "special token 0"},
		{"negative frequency", LlamaBPEOptions{VocabSize: 1000, MinFrequency: -1}, "minimum frequency -1 is negative"},
		{"coverage above 1", LlamaBPEOptions{VocabSize: 1000, CharacterCoverage: 1.5}, "character coverage 1.5 is outside [0, 1]"},
		{"coverage NaN", LlamaBPEOptions{VocabSize: 1000, CharacterCoverage: math.NaN()}, "character coverage NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TrainLlamaBPE(context.Background(), c, tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "datasets: train Llama BPE: ")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := TrainLlamaBPE(context.Background(), nil, LlamaBPEOptions{VocabSize: 1000})
	assert.ErrorContains(t, err, "corpus is nil")
}

// tokensOf returns the tokens of text's ids.
func tokensOf(t *testing.T, tok Tokenizer, text string) []string {
	t.Helper()
	ids, err := tok.Encode(text)
	require.NoError(t, err)
	vocab, _ := trainedModel(t, tok)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = vocab[id]
	}
	return out
}

// TestTrainLlamaBPESettings checks what each option does, on Opticks.
func TestTrainLlamaBPESettings(t *testing.T) {
	c, err := OpenCorpus(opticksPath(t), CorpusOptions{})
	require.NoError(t, err)
	train := func(opts LlamaBPEOptions) Tokenizer {
		t.Helper()
		tok, err := TrainLlamaBPE(context.Background(), c, opts)
		require.NoError(t, err)
		return tok
	}
	longest := func(tok Tokenizer) int {
		vocab, _ := trainedModel(t, tok)
		n := 0
		for _, s := range vocab[259:] {
			n = max(n, utf8.RuneCountInString(s))
		}
		return n
	}
	plain := train(LlamaBPEOptions{VocabSize: 4000})
	assert.Equal(t, 4000, plain.VocabSize())
	assert.Equal(t, 16, longest(plain), "MaxPieceLength 0 means SentencePiece's 16")
	full := train(LlamaBPEOptions{VocabSize: 8000, MaxPieceLength: -1, MergeDigits: true, CharacterCoverage: 1})
	assert.Greater(t, longest(full), 16)
	assert.Equal(t, 5, longest(train(LlamaBPEOptions{VocabSize: 4000, MaxPieceLength: 5})))

	// Digits: one by one by default, as Llama 2; merged with MergeDigits.
	assert.Equal(t, []string{"▁In", "▁", "1", "7", "0", "4"}, tokensOf(t, plain, "In 1704"))
	assert.Equal(t, []string{"▁In", "▁17", "04"}, tokensOf(t, full, "In 1704"))

	// A line end is not trained on: it is a byte token, as in Llama 2;
	// so is a character outside the alphabet.
	assert.Equal(t, []string{"▁light", "<0x0A>", "l", "ight"}, tokensOf(t, plain, "light\nlight"))
	assert.Equal(t, []string{"▁", "<0xD0>", "<0xB6>"}, tokensOf(t, plain, "ж"))

	// The alphabet: every character with CharacterCoverage 1; the rarest
	// fall back to bytes by default (0.99995), more under a lower
	// coverage; cut to fit a small vocabulary.
	vocab, _ := trainedModel(t, full)
	assert.Contains(t, vocab, "û", "once in Opticks")
	assert.Contains(t, vocab, "§")
	// Opticks has 566,098 characters (with "▁"); 0.99995 leaves out 27
	// of them, the 6 rarest: * (10 times), ê, ·, §, \\ and û (once).
	vocab, _ = trainedModel(t, plain)
	assert.Equal(t, 84, slices.IndexFunc(vocab, func(s string) bool { return s == "▁" })-258, "the alphabet")
	for _, r := range []string{"*", "ê", "·", "§", "\\", "û"} {
		assert.NotContains(t, vocab, r)
	}
	assert.Contains(t, vocab, "×", "13 times in Opticks")
	assert.Equal(t, []string{"▁", "<0xC2>", "<0xA7>"}, tokensOf(t, plain, "§"))
	covered := train(LlamaBPEOptions{VocabSize: 4000, CharacterCoverage: 0.9995})
	vocab, _ = trainedModel(t, covered)
	assert.NotContains(t, vocab, "×")
	assert.Contains(t, vocab, "a")
	small := train(LlamaBPEOptions{VocabSize: 269})
	vocab, merges := trainedModel(t, small)
	assert.Len(t, vocab, 269)
	assert.Empty(t, merges)
	assert.Equal(t, []string{"<unk>", "<s>", "</s>", "<0x00>"}, vocab[:4])
	assert.Equal(t, []string{"a", "e", "h", "i", "n", "o", "r", "s", "t", "▁"}, vocab[259:], "the 10 most frequent characters, in code point order")

	// More special tokens: ids after </s>, bytes after them; each is an
	// added token, never split, and never trained on.
	withPad := train(LlamaBPEOptions{VocabSize: 4000, SpecialTokens: []string{"<unk>", "<s>", "</s>", "<pad>"}})
	vocab, _ = trainedModel(t, withPad)
	assert.Equal(t, []string{"<pad>", "<0x00>"}, vocab[3:5])
	ids, err := withPad.Encode("<pad>light</s>")
	require.NoError(t, err)
	assert.Equal(t, []int{3}, ids[:1])
	assert.Equal(t, 2, ids[len(ids)-1])
	ids, _, err = withPad.(PairEncoder).EncodeWithSpecials("light")
	require.NoError(t, err)
	assert.Equal(t, 1, ids[0], "the template puts <s> first")
}

// TestTrainLlamaBPESpecialsInText checks that special tokens written in
// the corpus are cut out before training, as encoding cuts them out.
func TestTrainLlamaBPESpecialsInText(t *testing.T) {
	c := openText(t, strings.Repeat("<s>the light</s> <unk>\n", 200))
	tok, err := TrainLlamaBPE(context.Background(), c, LlamaBPEOptions{VocabSize: 400})
	require.NoError(t, err)
	vocab, _ := trainedModel(t, tok)
	for _, s := range vocab[259:] {
		assert.NotContains(t, s, "<", "a token %q made of a special token's characters", s)
	}
	assert.Equal(t, []string{"<s>", "▁the", "▁light", "</s>"}, tokensOf(t, tok, "<s>the light</s>"))
}

// TestTrainLlamaBPEDeterministic checks that two runs give the same file,
// which round-trips texts with characters outside the alphabet, and
// encodes the same once saved and loaded.
func TestTrainLlamaBPEDeterministic(t *testing.T) {
	c := openText(t, randomText(1, 20000))
	a, err := TrainLlamaBPE(context.Background(), c, LlamaBPEOptions{VocabSize: 500})
	require.NoError(t, err)
	b, err := TrainLlamaBPE(context.Background(), c, LlamaBPEOptions{VocabSize: 500})
	require.NoError(t, err)
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	assert.Equal(t, string(ja), string(jb))
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, a.Save(path))
	loaded, err := LoadTokenizer(path)
	require.NoError(t, err)
	for _, text := range []string{"the light\n\tof  rays ", "日本語 😀 é ﬁ", " leading", "1704", ""} {
		ids, err := a.Encode(text)
		require.NoError(t, err)
		back, err := a.Decode(ids)
		require.NoError(t, err)
		assert.Equal(t, text, back)
		again, err := loaded.Encode(text)
		require.NoError(t, err)
		assert.Equal(t, ids, again, "saved and loaded: %q", text)
	}
}

// errAfter is a context whose Err is context.Canceled from its n-th
// call on.
type errAfter struct {
	context.Context
	n int
}

func (c *errAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestTrainLlamaBPEContext checks that training stops with ctx's error
// while counting words and while merging.
func TestTrainLlamaBPEContext(t *testing.T) {
	c := openText(t, randomText(2, 20000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := TrainLlamaBPE(ctx, c, LlamaBPEOptions{VocabSize: 500})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "datasets: train Llama BPE")
	// Counting takes a few calls (one per chunk and per 4096 words); the
	// merge loop one per merge.
	_, err = trainLlamaBPE(&errAfter{context.Background(), 10}, textList{randomText(3, 20000)}, LlamaBPEOptions{VocabSize: 500})
	assert.ErrorIs(t, err, context.Canceled)
}

// TestTrainLlamaBPELinear fails if training 8000 tokens on 1 MB of text
// without spaces (one word) takes more than a few seconds. learnMerges,
// which scans each word a merge touches, takes 0.5 s for a word of 64 KB
// and 16 s for 256 KB (minutes for 1 MB); the indexed loop about 1 s for
// 1 MB.
func TestTrainLlamaBPELinear(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on 1 MB")
	}
	for _, c := range []struct {
		name  string
		texts textList
	}{
		{"one word of 1 MB", textList{opticksOf(t, 1<<20, false)}},
		{"1 MB with spaces", textList{opticksOf(t, 1<<20, true)}},
	} {
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := trainLlamaBPE(context.Background(), c.texts, LlamaBPEOptions{VocabSize: 8000})
			done <- err
		}()
		select {
		case err := <-done:
			require.NoError(t, err)
			t.Logf("%s: %v", c.name, time.Since(start))
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: training takes more than 20 s", c.name)
		}
	}
}

// BenchmarkTrainLlamaBPE trains 8000 tokens on Opticks.
func BenchmarkTrainLlamaBPE(b *testing.B) {
	c, err := OpenCorpus(opticksPath(b), CorpusOptions{})
	require.NoError(b, err)
	b.Run("opticks-8000", func(b *testing.B) {
		b.SetBytes(c.Size())
		for range b.N {
			if _, err := TrainLlamaBPE(context.Background(), c, LlamaBPEOptions{VocabSize: 8000}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// seq returns 0, 1, …, n-1.
func seq(n uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i)
	}
	return out
}

// TestTrainLlamaBPETooManyCharacters checks the bound on the characters
// of the distinct words (positions are int32), lowered for the test.
func TestTrainLlamaBPETooManyCharacters(t *testing.T) {
	defer func(n int) { maxLlamaSymbols = n }(maxLlamaSymbols)
	maxLlamaSymbols = 100
	_, err := TrainLlamaBPE(context.Background(), openText(t, randomText(4, 1000)), LlamaBPEOptions{VocabSize: 500})
	assert.ErrorContains(t, err, "distinct words hold more than 100 characters")
	_, err = TrainLlamaBPE(context.Background(), openText(t, "the light of the prism\n"), LlamaBPEOptions{VocabSize: 500})
	assert.NoError(t, err)
}
