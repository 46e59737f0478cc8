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
// Byte-level BPE tokenizers are Hugging Face tokenizer.json files, run by
// github.com/sugarme/tokenizer with GPT-2's exact pre-tokenization
// (bytelevel.go) and added tokens handled here (hf.go). TrainBPE has its
// own trainer (bpe_train.go says why it does not use that module's). A
// character-level tokenizer is saved as a small JSON file of its own.
package datasets
