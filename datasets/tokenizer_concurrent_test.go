package datasets

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/racetest"
)

// TestConcurrentTokenizers runs Encode and Decode (and a PairEncoder's
// EncodeWithSpecials and EncodePair) of every kind of tokenizer from 8
// goroutines at once, one tokenizer shared by all of them, and checks
// that every answer equals the same call made alone, and that an
// UnknownCounter counted every call's unknown tokens. The kinds: a
// byte-level BPE as TrainBPE writes it (its word cache), GPT-2's layout,
// a layout that sugarme/tokenizer runs (a BPE behind a normalizer), a
// Unigram (its word cache), WordPiece (trained, and a Hugging Face file), the character
// tokenizer and WordLevel (their unknown counts), and a Llama-2-style
// BPE (a PairEncoder, its word cache). Run it with -race (the CI does).
func TestConcurrentTokenizers(t *testing.T) {
	texts := []string{"hello world, hello there", "the prism refracts the light\n", "héllo wörld ☃ <s>"}
	corpus := texts[0] + "\n" + texts[1]
	bpe, err := TrainBPETexts(texts, 300, []string{"<pad>", "<s>", "</s>"})
	require.NoError(t, err)
	gpt2, err := parseTokenizer([]byte(gpt2Style))
	require.NoError(t, err)
	// A trained BPE behind a Lowercase normalizer and a Whitespace
	// pre-tokenizer is no longer the layout zoo runs itself.
	var f map[string]any
	raw, err := bpe.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &f))
	f["normalizer"] = map[string]any{"type": "Lowercase"}
	f["pre_tokenizer"] = map[string]any{"type": "Whitespace"}
	f["decoder"] = nil
	raw, err = json.Marshal(f)
	require.NoError(t, err)
	sugarBPE, err := parseHF(raw)
	require.NoError(t, err)
	require.False(t, sugarBPE.native)
	unigram, err := parseTokenizer([]byte(`{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["h",-2],["e",-2],["l",-2],["o",-2],["hello",-1],["the",-1],["t",-3],["r",-3],["w",-3],["d",-3],["lo",-2]]},"pre_tokenizer":{"type":"Whitespace"}}`))
	require.NoError(t, err)
	wp, err := TrainWordPieceTexts(context.Background(), texts, WordPieceOptions{VocabSize: 80, Lowercase: true})
	require.NoError(t, err)
	hfwp, err := LoadTokenizer(filepath.Join("testdata", "wordpiece_tiny.json"))
	require.NoError(t, err)
	char, err := NewCharTokenizer(openText(t, corpus))
	require.NoError(t, err)
	wl, err := TrainWordLevelTexts(context.Background(), texts[:2], WordLevelOptions{})
	require.NoError(t, err)
	llama, err := LoadTokenizer(filepath.Join("testdata", "llama_bpe.json"))
	require.NoError(t, err)

	const rounds = 2
	for _, c := range []struct {
		name string
		tok  Tokenizer
		text string // Encode's text; texts[2] holds characters the char and word-level vocabularies lack
	}{
		{"byte-level BPE", bpe, texts[2]},
		{"GPT-2 layout", gpt2, "hello world"},
		{"BPE run by sugarme", sugarBPE, "Hello world, HELLO there"},
		{"Unigram", unigram, "hello the world"},
		{"WordPiece", wp, texts[2]},
		{"WordPiece file", hfwp, "[CLS] Café PRISM rays 中x"},
		{"character", char, texts[2]},
		{"WordLevel", wl, texts[2]},
		{"Llama 2 layout", llama, texts[2] + " 光 😀"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, err := c.tok.Encode(c.text)
			require.NoError(t, err)
			calls := []racetest.Call{
				{Name: "Encode", Run: func() (any, error) { return c.tok.Encode(c.text) }},
				{Name: "Decode", Run: func() (any, error) { return c.tok.Decode(ids) }},
			}
			h, ok := c.tok.(*hfTokenizer)
			if tt, templated := c.tok.(*hfTemplated); templated {
				h, ok = tt.hfTokenizer, true
			}
			if ok && h.native {
				// Words no call has encoded yet, so that concurrent calls
				// write the word cache, checked against a copy of the
				// tokenizer that only this test's lock lets encode.
				raw, err := h.MarshalJSON()
				require.NoError(t, err)
				ref, err := parseHF(raw)
				require.NoError(t, err)
				var mu sync.Mutex
				var n atomic.Int64
				calls = append(calls, racetest.Call{Name: "Encode new words", Run: func() (any, error) {
					i := n.Add(1)
					text := newWord(i) + " hello " + newWord(i*7+3)
					got, err := h.Encode(text)
					if err != nil {
						return nil, err
					}
					mu.Lock()
					want, err := ref.Encode(text)
					mu.Unlock()
					if !slices.Equal(got, want) {
						return fmt.Sprintf("%q: %v, want %v", text, got, want), err
					}
					return "as encoded alone", err
				}})
			}
			if w, ok := c.tok.(PairEncoder); ok {
				calls = append(calls,
					racetest.Call{Name: "EncodeWithSpecials", Run: func() (any, error) {
						ids, types, err := w.EncodeWithSpecials(c.text)
						return [][]int{ids, types}, err
					}},
					racetest.Call{Name: "EncodePair", Run: func() (any, error) {
						ids, types, err := w.EncodePair(c.text, texts[0])
						return [][]int{ids, types}, err
					}})
			}
			uc, counts := c.tok.(UnknownCounter)
			var before, per int
			if counts {
				// What one round of the calls counts, each made once.
				before = uc.Unknown()
				for _, call := range calls {
					_, err := call.Run()
					require.NoError(t, err, call.Name)
				}
				per = uc.Unknown() - before
				before = uc.Unknown()
				if c.tok == char || c.tok == wl {
					require.Positive(t, per, "the text has unknown tokens")
				}
			}
			racetest.Check(t, rounds, calls...)
			if counts {
				// Check makes each call once alone, then rounds times on
				// each goroutine.
				n := 1 + racetest.Goroutines*rounds
				require.Equal(t, before+per*n, uc.Unknown(), "unknown tokens counted")
			}
		})
	}
}

// TestConcurrentImageProcessor runs an ImageProcessor (ViT's counterpart of
// a tokenizer) from 8 goroutines at once on images of several sizes, and
// checks that every image's pixels equal those it gives alone. Run it with
// -race (the CI does).
func TestConcurrentImageProcessor(t *testing.T) {
	cfg := DefaultProcessorConfig()
	cfg.Size = ImageSize{Height: 16, Width: 16}
	proc, err := NewImageProcessor(cfg, 3)
	require.NoError(t, err)
	var calls []racetest.Call
	for i, side := range []int{16, 23, 40} {
		img := image.NewNRGBA(image.Rect(0, 0, side, side+i))
		for j := range img.Pix {
			img.Pix[j] = uint8(j*7 + i)
		}
		calls = append(calls, racetest.Call{Name: fmt.Sprintf("Process %d×%d", side, side+i), Run: func() (any, error) { return proc.Process(img) }})
	}
	racetest.Check(t, 2, calls...)
}

// newWord is a word made of the letters of "hello world", a different one
// for every i ≥ 0, which the tokenizers of these tests all have.
func newWord(i int64) string {
	const letters = "dehlorw"
	w := []byte{'h'}
	for ; i > 0; i /= int64(len(letters)) {
		w = append(w, letters[i%int64(len(letters))])
	}
	return string(w)
}
