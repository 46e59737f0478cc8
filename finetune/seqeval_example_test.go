package finetune_test

import (
	"fmt"

	"github.com/d73a19ff/zoo/finetune"
)

// seqeval's README example: one of the two MISC chunks is found with the
// wrong span, so precision, recall and F1 are 0.5, while 8 of the 10 tags
// are right.
func ExampleSeqEval() {
	truth := [][]string{{"O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}}
	pred := [][]string{{"O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}}
	s, _ := finetune.SeqEval(truth, pred)
	acc, _ := finetune.TokenAccuracy(truth, pred)
	fmt.Printf("precision %.2f recall %.2f F1 %.2f accuracy %.2f\n", s.Precision(), s.Recall(), s.F1(), acc)
	// Output: precision 0.50 recall 0.50 F1 0.50 accuracy 0.80
}
