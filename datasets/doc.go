// Package datasets turns a text corpus into batches of token ids for
// language-model training.
//
// The pipeline, from text files to training batches:
//
//	c, err := datasets.OpenCorpus("data/*.txt", datasets.CorpusOptions{})  // a file, a directory or a glob
//	tok, err := datasets.TrainBPE(c, 4096, []string{"<|endoftext|>"})       // or NewCharTokenizer, LoadTokenizer
//	toks, err := datasets.Tokenize(c, tok, "cache")                         // cached on disk, keyed by corpus and tokenizer
//	train, val, err := toks.Split(0.1)                                      // first 90% / last 10%
//	b, err := datasets.NewBatcher(train, 16, 128, 1)                        // B = 16 windows of T = 128 tokens
//	x, y := b.Next()                                                        // (B, T) each, y is x shifted by one
//
// Tokenizers are Hugging Face tokenizer.json files, and encode and decode
// as Hugging Face's tokenizers library does, id for id (hf.go; checked
// on the whole of Opticks by tools/hftokenizers). A BPE runs entirely
// here in GPT-2's layout, which TrainBPE writes (added tokens, GPT-2's
// pre-tokenization in bytelevel.go, the BPE merges), and in Llama 2's
// (byte-fallback BPE; the normalizers Prepend, Replace, NFC, NFKC and
// Sequence; the Metaspace pre-tokenizer; the decoders ByteFallback,
// Fuse, Strip, Replace, Metaspace and Sequence; a TemplateProcessing,
// which makes the tokenizer a PairEncoder: hfpipeline.go). Merging is a
// priority queue, O(n log n) in the length of a word. A Unigram model
// (SentencePiece's unigram language model, unigram.go) runs here with
// the same parts and the Whitespace and WhitespaceSplit pre-tokenizers,
// as tokenizers' Viterbi over a trie of its pieces, linear in the text;
// a Unigram file with another part (the Precompiled normalizer of
// SentencePiece conversions, Lowercase, …) is refused, naming it. Other
// layouts (BPE, and WordLevel and WordPiece files zoo's own tokenizers do
// not cover) run on github.com/sugarme/tokenizer, a BPE with our BPE
// model, unless they mix in one of the parts above: that is refused,
// naming the part not implemented. TrainBPE has its own trainer
// (bpe_train.go says why it does not use that module's), and
// TrainLlamaBPE trains a SentencePiece-style byte-fallback BPE written
// in Llama 2's layout (llama_bpe_train.go: the vocabulary and merges of
// tokenizers' BpeTrainer with the same settings, in time about linear in
// the corpus). The
// character tokenizer is a tokenizer.json too, with an unknown token
// [UNK] (char.go); files in zoo's older zoo-char format still load.
package datasets
