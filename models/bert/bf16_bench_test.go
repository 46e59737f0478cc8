package bert

import (
	"testing"

	"github.com/d73a19ff/zoo/internal/graphtest"
)

// BenchmarkBERTMiniPretrainStepBF16_T128_B32 is
// BenchmarkBERTMiniPretrainStep_T128_B32's step (BERT-Mini, the MLM loss
// over all 4,096 positions through the 30,522-word head, NSP, backward
// and AdamW) in float32 and with bf16 products (ops.UseBF16, as the
// engine does under --bf16), on two models built alike, interleaved: each
// iteration runs one step of each, in alternating order, so that a shared
// machine's load falls on both alike. It reports each one's mean and
// least ms/step and the median of the iterations' ratios (f32 time / bf16
// time).
//
//	go test ./models/bert -run '^$' -bench 'PretrainStepBF16' -benchtime 6x
func BenchmarkBERTMiniPretrainStepBF16_T128_B32(b *testing.B) {
	f32, done32 := pretrainStep(b, 0, false)
	defer done32()
	bf, doneBF := pretrainStep(b, 0, true)
	defer doneBF()
	graphtest.InterleaveBF16(b, f32, bf)
}
