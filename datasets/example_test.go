package datasets_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
)

// The whole pipeline: corpus, tokenizer, cached tokens, split, batches.
func Example() {
	dir, err := os.MkdirTemp("", "datasets-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	text := strings.Repeat("to be or not to be\n", 100)
	if err := os.WriteFile(filepath.Join(dir, "corpus.txt"), []byte(text), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	c, err := datasets.OpenCorpus(filepath.Join(dir, "*.txt"), datasets.CorpusOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := datasets.NewCharTokenizer(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	toks, err := datasets.Tokenize(c, tok, filepath.Join(dir, "cache"))
	if err != nil {
		fmt.Println(err)
		return
	}
	train, val, err := toks.Split(0.1)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := datasets.NewBatcher(train, 2, 8, 1) // B = 2, T = 8
	if err != nil {
		fmt.Println(err)
		return
	}
	x, y := b.Next()
	xs, _ := tok.Decode(x[:8])
	ys, _ := tok.Decode(y[:8])
	fmt.Println("vocabulary:", tok.VocabSize(), "tokens:", toks.Len(), "train:", train.Len(), "val:", val.Len())
	fmt.Println("batch:", len(x), len(y))
	fmt.Printf("x row 0: %q\ny row 0: %q\n", xs, ys)
	// Output:
	// vocabulary: 9 tokens: 1900 train: 1710 val: 190
	// batch: 16 16
	// x row 0: "r not to"
	// y row 0: " not to "
}

// Say how much of a text a tokenizer could not represent: the growth of
// Unknowns over an encoding is the count, and UnknownNoteFor names the
// unit (a WordPiece maps whole words to [UNK], a character tokenizer
// characters) and the token. No unknowns, no note.
func ExampleUnknownNoteFor() {
	dir, err := os.MkdirTemp("", "datasets-unknown")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	vocab := filepath.Join(dir, "vocab.txt")
	words := "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\n##s\n.\n"
	if err := os.WriteFile(vocab, []byte(words), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	wp, err := datasets.LoadWordPieceVocab(vocab, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "corpus.txt"), []byte("the cat sat\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	c, err := datasets.OpenCorpus(filepath.Join(dir, "corpus.txt"), datasets.CorpusOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	char, err := datasets.NewCharTokenizer(c)
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, c := range []struct {
		tok   datasets.Tokenizer
		texts []string
	}{
		{wp, []string{"The cats sat.", "the dog sat", "the dogs ate"}},
		{char, []string{"a cat sat", "the dog"}},
	} {
		for _, text := range c.texts {
			before := datasets.Unknowns(c.tok)
			ids, err := c.tok.Encode(text)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%q: %v\n", text, ids)
			fmt.Print(datasets.UnknownNoteFor(c.tok, datasets.Unknowns(c.tok)-before, "the input"))
		}
	}
	// Output:
	// "The cats sat.": [5 6 8 7 9]
	// "the dog sat": [5 1 7]
	// note: 1 word of the input is not in the tokenizer's vocabulary and was mapped to [UNK]
	// "the dogs ate": [5 1 1]
	// note: 2 words of the input are not in the tokenizer's vocabulary and were mapped to [UNK]
	// "a cat sat": [3 2 4 3 8 2 7 3 8]
	// "the dog": [8 6 5 2 0 0 0]
	// note: 3 characters of the input are not in the tokenizer's vocabulary and were mapped to [UNK]
}

// Check a number of image-loader workers before starting them: 0 (one
// worker) up to MaxLoaderWorkers.
func ExampleCheckWorkers() {
	for _, n := range []int{0, 4, datasets.MaxLoaderWorkers, -1, 1_000_000} {
		err := datasets.CheckWorkers(n)
		if err == nil {
			fmt.Println(n, "ok")
			continue
		}
		msg, _, _ := strings.Cut(err.Error(), " (this machine") // the rest counts this machine's cores
		fmt.Println(msg)
	}
	// Output:
	// 0 ok
	// 4 ok
	// 256 ok
	// workers -1: want 0 or more
	// workers 1000000 is more than 256: image decoding is CPU-bound, so use about one worker per core
}

// An image processor's image_mean and image_std, one value per channel: a
// single value (a grey model's, or a preprocessor_config.json's scalar)
// repeated for each channel; a list per channel as it is.
func ExamplePerChannel() {
	fmt.Println(datasets.PerChannel([]float64{0.5}, 3))
	fmt.Println(datasets.PerChannel([]float64{0.485, 0.456, 0.406}, 3))
	fmt.Println(datasets.PerChannel([]float64{0.5}, 1))
	// Output:
	// [0.5 0.5 0.5]
	// [0.485 0.456 0.406]
	// [0.5]
}

// A Llama-2-style tokenizer.json (a byte-fallback BPE with Prepend and
// Replace normalizers, a TemplateProcessing that puts <s> first) loads
// as a PairEncoder: Encode adds no special token, EncodeWithSpecials
// adds the template's. A character outside the vocabulary becomes its
// UTF-8 bytes (<0xXX> tokens), and decoding gives the text back.
func ExampleLoadTokenizer_llama() {
	tok, err := datasets.LoadTokenizer(filepath.Join("testdata", "llama_bpe.json"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, _ := tok.Encode("Light 光")
	text, _ := tok.Decode(ids)
	withBOS, _, _ := tok.(datasets.PairEncoder).EncodeWithSpecials("Light 光")
	fmt.Println(ids, withBOS[0])
	fmt.Printf("%q\n", text)
	// Output:
	// [1748 232 136 140] 1
	// "Light 光"
}

// A Llama-3-style tokenizer.json (a byte-level BPE behind a Split with
// Llama 3's regular expression, then ByteLevel without its own) runs
// natively, as Qwen2's does. Its words here are "Light", "'s", " ",
// "123", "456", "7" and "\r\n" (digits go in threes), the ids are those
// of Hugging Face's tokenizers, and decoding gives the text back.
func ExampleLoadTokenizer_llama3() {
	tok, err := datasets.LoadTokenizer(filepath.Join("testdata", "llama3_bpe.json"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, _ := tok.Encode("Light's 1234567\r\n")
	text, _ := tok.Decode(ids)
	withBOS, _, _ := tok.(datasets.PairEncoder).EncodeWithSpecials("Light")
	fmt.Println(ids, withBOS)
	fmt.Printf("%q\n", text)
	// Output:
	// [1019 677 32 1010 51 2251 54 55 13 10] [2256 1019]
	// "Light's 1234567\r\n"
}

// RoBERTa's tokenizer trained on a corpus: a byte-level BPE with <s>
// <pad> </s> <unk> <mask> at roberta-base's ids and its RobertaProcessing
// post-processor, so <s> text </s> and <s> A </s></s> B </s> come out of
// it as from roberta-base's tokenizer.json.
func ExampleTrainRobertaBPETexts() {
	tok, err := datasets.TrainRobertaBPETexts(context.Background(), []string{"the light of the sun", "the light of the moon"}, 300)
	if err != nil {
		fmt.Println(err)
		return
	}
	pe := tok.(datasets.PairEncoder)
	ids, _, err := pe.EncodePair("light", "sun")
	if err != nil {
		fmt.Println(err)
		return
	}
	text, err := tok.Decode(ids)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(datasets.RobertaSpecials, ids[0], ids[len(ids)-1])
	fmt.Printf("%q\n", text)
	// Output:
	// [<s> <pad> </s> <unk> <mask>] 0 2
	// "<s>light</s></s>sun</s>"
}
