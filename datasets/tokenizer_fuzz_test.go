package datasets

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseTokenizer feeds LoadTokenizer's parser arbitrary bytes: it must
// return an error or a tokenizer, never panic, and a tokenizer it returns
// must encode a short text (fuzzed too) into ids in [0, VocabSize()) and
// decode them without panicking.
//
// testdata/fuzz/FuzzParseTokenizer holds the inputs it found: model and
// added-token ids outside [0, MaxInt32), which made Encode return ids
// beyond VocabSize (id+1 overflowed) or negative ones.
//
// The seeds cover each format LoadTokenizer reads: byte-level BPE as
// TrainBPE writes it, with and without added tokens; GPT-2's layout as
// Hugging Face saves it; a WordLevel run by sugarme; a Unigram; the character
// tokenizer's tokenizer.json and its older zoo-char file; WordPiece as
// TrainWordPiece writes it and testdata/wordpiece_tiny.json; and the
// malformed files of TestLoadTokenizerErrors.
func FuzzParseTokenizer(f *testing.F) {
	const sample = "hello world <s> héllo\n☃"
	texts := []string{"hello world, hello there", "the prism refracts the light\n", "héllo wörld ☃"}
	for _, specials := range [][]string{nil, {"<|endoftext|>"}, {"<pad>", "<s>", "</s>"}} {
		tok, err := TrainBPETexts(texts, 300, specials)
		if err != nil {
			f.Fatal(err)
		}
		raw, err := tok.MarshalJSON()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, sample)
	}
	char, err := NewCharTokenizer(openText(f, "hello world\n"))
	if err != nil {
		f.Fatal(err)
	}
	raw, err := char.MarshalJSON()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw, sample)
	wp, err := TrainWordPieceTexts(context.Background(), texts, WordPieceOptions{VocabSize: 80, Lowercase: true})
	if err != nil {
		f.Fatal(err)
	}
	raw, err = wp.MarshalJSON()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw, sample)
	if raw, err := os.ReadFile(filepath.Join("testdata", "wordpiece_tiny.json")); err == nil {
		f.Add(raw, "[CLS] Café PRISM\u0000 rays 中x")
	}
	for _, s := range []string{
		`{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"a":0}}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0}},"post_processor":{"type":"BertProcessing","sep":["[SEP]",7],"cls":["[CLS]",0]}}`,
		gpt2Style,
		zooChar,
		`{"type":"zoo-char","version":1,"chars":["\u0000","\ufffd"]}`,
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`,
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]},"decoder":{"type":"Fuse"}}`,
		`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[],"unk_token":"a"},"pre_tokenizer":{"type":"ByteLevel","use_regex":false}}`,
		`{"added_tokens":[{"id":2,"content":"<s>","special":true},{"id":3,"content":"x","special":false,"lstrip":true,"rstrip":true,"single_word":true}],"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]}}`,
		`{"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,"vocab":{"[UNK]":0,"hello":1,"##s":2}},"pre_tokenizer":{"type":"BertPreTokenizer"},"decoder":{"type":"WordPiece","prefix":"##","cleanup":true}}`,
		`{"model":{"type":"WordLevel","vocab":{"[UNK]":0,"a":1},"unk_token":"[UNK]"},"pre_tokenizer":{"type":"Whitespace"}}`,
		`{"model":{"type":"Unigram","vocab":[["<unk>",0],["a",-1]],"unk_id":0}}`,
		// Llama 2's layouts: byte-fallback BPE, Prepend and Replace or
		// Metaspace, a decoder sequence, a template.
		`{"added_tokens":[{"id":0,"content":"<unk>","special":true},{"id":1,"content":"<s>","special":true},{"id":7,"content":"lo","normalized":true,"lstrip":true}],` +
			`"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"},{"type":"NFKC"}]},` +
			`"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}},` +
			`"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":1}]},` +
			`"model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,"vocab":{"<unk>":0,"<s>":1,"<0x68>":2,"<0xC3>":3,"▁":4,"h":5,"▁h":6},"merges":["▁ h"]}}`,
		`{"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},"decoder":{"type":"Metaspace","replacement":"▁","prepend_scheme":"never"},` +
			`"model":{"type":"BPE","unk_token":"<unk>","byte_fallback":true,"vocab":{"<unk>":0,"<0xE2>":1,"▁":2,"a":3,"▁a":4},"merges":[["▁","a"]]}}`,
		"{not json",
		`{"name": "x"}`,
		`{"model": {"type": "BPE", "vocab": 3, "merges": []}}`,
		`{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`,
		`{"model": {"type": "Nope"}}`,
		`{"model": null}`,
		`{"model": {}}`,
		`{"added_tokens": [{"id": 7, "content": "<s>", "special": true}], "model": {"type": "BPE", "vocab": {"a": 0, "<s>": 1}, "merges": []}}`,
		`{"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}}`,
		`{"model":{"type":"BPE","vocab":{"a":9223372036854775807},"merges":[]}}`,
		`{"type": "zoo-char", "version": 2, "chars": ["a"]}`,
		`{"type": "zoo-char", "version": 1, "chars": ["ab"]}`,
		`{"type": "zoo-char", "version": 1, "chars": ["a", "a"]}`,
		`{"type": "zoo-char", "version": 1, "chars": []}`,
	} {
		f.Add([]byte(s), sample)
	}

	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		tok, err := parseTokenizer(raw)
		if err != nil {
			return
		}
		if tok.VocabSize() <= 0 {
			t.Fatalf("accepted a tokenizer with vocabulary size %d", tok.VocabSize())
		}
		ids, err := tok.Encode(text)
		if err != nil {
			return // a vocabulary without these characters
		}
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("Encode returned id %d outside [0, %d)", id, tok.VocabSize())
			}
		}
		_, _ = tok.Decode(ids)
		_, _ = tok.Decode([]int{0, tok.VocabSize() - 1})
		if _, err := tok.Decode([]int{tok.VocabSize()}); err == nil {
			t.Fatalf("Decode accepted id %d = VocabSize", tok.VocabSize())
		}
	})
}
