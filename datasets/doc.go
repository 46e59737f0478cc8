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
// on the whole of Opticks by tools/hftokenizers). GPT-2's layout, which
// TrainBPE writes, runs entirely here: added tokens, GPT-2's
// pre-tokenization (bytelevel.go) and the BPE merges; other layouts run
// on github.com/sugarme/tokenizer with our BPE model. TrainBPE has its own
// trainer (bpe_train.go says why it does not use that module's). The
// character tokenizer is a tokenizer.json too, with an unknown token
// [UNK] (char.go); files in zoo's older zoo-char format still load.
package datasets
