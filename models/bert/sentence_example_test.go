package bert_test

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/d73a19ff/zoo/models/bert"
)

// Sentence embeddings as sentence-transformers computes them: a BERT
// encoder, mean pooling over the attention mask and L2 normalisation,
// saved as a sentence-transformers folder and loaded back.
func ExampleLoadSentenceEmbeddings() {
	ckpt := tinyCheckpoint("feature-extraction") // a BERT checkpoint with its tokenizer.json
	defer os.RemoveAll(ckpt)
	m, _, err := bert.Load(ckpt)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := bert.NewSentenceEmbeddings(m, ckpt, bert.MeanPooling(m.Config.HiddenSize), true)
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "zoo-sentence")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := st.Save(dir); err != nil { // modules.json, 1_Pooling/, 2_Normalize/, ...
		fmt.Println(err)
		return
	}

	s, err := bert.LoadSentenceEmbeddings(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	emb, err := s.Embed(context.Background(), []string{"the cat sat on the mat", "a dog ran in the park"})
	if err != nil {
		fmt.Println(err)
		return
	}
	cos := 0.0
	for k := range emb[0] {
		cos += float64(emb[0][k]) * float64(emb[1][k])
	}
	fmt.Printf("%d embeddings of %d; cosine in [-1, 1]: %v\n", len(emb), len(emb[0]), math.Abs(cos) <= 1)
	// Output:
	// 2 embeddings of 32; cosine in [-1, 1]: true
}
