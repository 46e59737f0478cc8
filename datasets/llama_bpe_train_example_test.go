package datasets_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
)

// A Llama-2-style tokenizer trained on a corpus: <unk> <s> </s> are ids
// 0-2 and the template puts <s> first; the byte tokens <0x00> … <0xFF>
// are ids 3-258, then come the corpus's characters and the merged tokens
// ("▁the" is 280, "▁light" 298). The corpus runs out of pairs at 301
// tokens. Digits stay single, as in Llama 2 ("▁", then 1 7 0 4 as
// 260 262 259 261); a character the corpus never had ("光", and the
// line end) is written as its UTF-8 bytes (232 136 140 is E5 85 89 + 3);
// decoding gives the text back. The file Save writes loads in Hugging Face's tokenizers
// with the same ids.
func ExampleTrainLlamaBPE() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "corpus.txt")
	_ = os.WriteFile(path, []byte(strings.Repeat("the prism refracts the light in 1704\n", 50)), 0o644)
	c, err := datasets.OpenCorpus(path, datasets.CorpusOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := datasets.TrainLlamaBPE(context.Background(), c, datasets.LlamaBPEOptions{VocabSize: 320})
	if err != nil {
		fmt.Println(err)
		return
	}
	text := "the light 1704 光\n"
	ids, _ := tok.Encode(text)
	withBOS, _, _ := tok.(datasets.PairEncoder).EncodeWithSpecials(text)
	back, _ := tok.Decode(ids)
	fmt.Println(tok.VocabSize(), ids, withBOS[0])
	fmt.Printf("%q\n", back)
	// Output:
	// 301 [280 298 277 260 262 259 261 277 232 136 140 13] 1
	// "the light 1704 光\n"
}
