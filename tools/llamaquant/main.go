// Command llamaquant measures what a reduced weight format costs a
// LLaMA-family checkpoint: the mean negative log-likelihood (and the
// perplexity) of the last fraction of a text, by characters, through the
// model with float32, bf16 and int8 weights (models.WithWeightFormat),
// in windows of the given length, as llama.ForCausalLM.MeanNLL counts
// them.
//
//	go run ./tools/llamaquant -checkpoint runs/lb1/checkpoints/final \
//	    -text $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt -window 64
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

func main() {
	ckpt := flag.String("checkpoint", "", "a LLaMA-family checkpoint `dir` with its tokenizer.json")
	text := flag.String("text", "", "a UTF-8 text `file`; its last -fraction of characters is scored")
	fraction := flag.Float64("fraction", 0.1, "the share of the text, by characters from its end, that is scored")
	window := flag.Int("window", 64, "tokens per window")
	flag.Parse()
	if err := run(*ckpt, *text, *fraction, *window); err != nil {
		fmt.Fprintln(os.Stderr, "llamaquant:", err)
		os.Exit(1)
	}
}

func run(ckpt, file string, fraction float64, window int) error {
	if ckpt == "" || file == "" || !(fraction > 0 && fraction <= 1) {
		return fmt.Errorf("need -checkpoint, -text and 0 < -fraction ≤ 1")
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	if st.Size() > 64<<20 {
		return fmt.Errorf("%s: %d bytes; at most 64 MiB", file, st.Size())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	runes := []rune(string(b))
	tail := string(runes[len(runes)-int(float64(len(runes))*fraction):])
	tok, err := models.LoadTokenizer(ckpt)
	if err != nil {
		return err
	}
	ids, err := tok.Encode(tail)
	if err != nil {
		return err
	}
	var base float64
	for _, f := range []models.WeightFormat{models.WeightsF32, models.WeightsBF16, models.WeightsInt8} {
		m, _, err := llama.LoadForCausalLM(ckpt, models.WithWeightFormat(f))
		if err != nil {
			return err
		}
		nll, n, err := m.MeanNLL(ids, window)
		if err != nil {
			return err
		}
		if f == models.WeightsF32 {
			base = nll
		}
		fmt.Printf("%-4s  mean NLL %.6f over %d tokens  perplexity %.4f  (%+.3f%% against f32)\n",
			f, nll, n, math.Exp(nll), 100*(math.Exp(nll)/math.Exp(base)-1))
	}
	return nil
}
