package pretrain

// ALBERT's pretraining objective is masked LM and sentence-order
// prediction (SOP, Lan et al. 2019 §4.2): both segments of an example are
// consecutive text of one document, and half the time (seeded) they are
// swapped, sentence_order_label 1. BERTConfig.ModelType "albert" (zoo
// pretrain bert --model-type albert) selects it: the model becomes an
// AlbertForPreTraining (sop_classifier on the pooled output) and the pairs
// MakeSOPPairs'. The run, its checkpoints and resume are BERT's; the
// engine's figures keep BERT's names (nsp_loss, nsp_accuracy are the
// sentence-order ones).

import (
	"fmt"
	"math/rand/v2"

	"github.com/d73a19ff/zoo/models/bert"
)

// AlbertModelType is the BERTConfig.ModelType that pretrains an ALBERT
// with masked LM and sentence-order prediction.
const AlbertModelType = bert.AlbertModelType

// albertModel is m as an ALBERT of the same sizes (layers, width, heads,
// inner width, positions, token types) with AlbertConfig's defaults for
// the rest: embeddings min(128, hidden_size) wide, one group of one
// shared layer, gelu_new, no dropout but classifier_dropout_prob 0.1. An
// ALBERT m is returned as it is.
func albertModel(m bert.Config) bert.Config {
	if m.ModelType == bert.AlbertModelType {
		return m
	}
	a := bert.AlbertBase()
	a.VocabSize, a.HiddenSize, a.NumHiddenLayers, a.NumAttentionHeads, a.IntermediateSize = m.VocabSize, m.HiddenSize, m.NumHiddenLayers, m.NumAttentionHeads, m.IntermediateSize
	a.MaxPositionEmbeddings, a.TypeVocabSize, a.PadTokenID, a.InitializerRange = m.MaxPositionEmbeddings, m.TypeVocabSize, m.PadTokenID, m.InitializerRange
	a.EmbeddingSize = min(a.EmbeddingSize, m.HiddenSize)
	return a
}

// withModelType is c with its model made the type ModelType names: for
// "albert", the model section as an ALBERT (albertModel); a model section
// of model_type albert sets ModelType. A ModelType that contradicts the
// model section's is an error.
func (c BERTConfig) withModelType() (BERTConfig, error) {
	switch {
	case MLMOnly(c.ModelType):
		// RoBERTa and DistilBERT: forMLM sets their model up.
	case c.ModelType != "" && c.ModelType != bert.ModelType && c.ModelType != AlbertModelType:
		return c, fmt.Errorf("config: model_type %q is not %s, %s, %s or %s (zoo pretrain bert --model-type)", c.ModelType, bert.ModelType, AlbertModelType, bert.RobertaModelType, bert.DistilBertModelType)
	case c.ModelType == AlbertModelType:
		c.Model = albertModel(c.Model)
	case c.Model.ModelType == bert.AlbertModelType && c.ModelType == "":
		c.ModelType = AlbertModelType
	case c.Model.ModelType == bert.AlbertModelType:
		return c, fmt.Errorf("config: model_type %q, but the model section is an ALBERT (model_type albert): use --model-type albert or a BERT model section", c.ModelType)
	}
	return c, nil
}

// MakeSOPPairs builds ALBERT's sentence-order examples of every document,
// dupe_factor times: segments (sentences) are gathered up to a target
// length (short_seq_prob as MakeBERTPairs) and split at a random sentence
// into A and B, consecutive; with probability 0.5 they are swapped
// ([CLS] B [SEP] A [SEP], sentence_order_label 1, BERTExample.RandomNext
// and BERTPairs.RandomNext). A chunk of one sentence is split inside the
// sentence, at a random token, so that every example holds two
// consecutive segments of one document. (ALBERT's
// create_pretraining_data.py takes B from another document for such a
// chunk, which mixes next-sentence negatives into SOP; zoo does not.)
// One document is enough.
func MakeSOPPairs(d *BERTDocuments, sp BERTSpecials, cfg BERTPairConfig, seed uint64) (*BERTPairs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.NumDocuments() < 1 {
		return nil, fmt.Errorf("albert: sentence-order pairs need a document, got none")
	}
	maxTokens := cfg.MaxSeqLength - 3
	p := eachDocument(d, cfg, seed, 0x50b, func(p *BERTPairs, j int, rng *rand.Rand) {
		p.sopDocument(d, j, sp, cfg, maxTokens, rng)
	})
	if p.Len() == 0 {
		return nil, fmt.Errorf("albert: the documents made no sentence-order pairs (each needs two tokens at least)")
	}
	return p, nil
}

func (p *BERTPairs) sopDocument(d *BERTDocuments, j int, sp BERTSpecials, cfg BERTPairConfig, maxTokens int, rng *rand.Rand) {
	lo, hi := d.docSentences(j)
	var chunk []int // sentence indexes
	length := 0
	target := p.target(cfg, maxTokens, rng)
	for i := lo; i < hi; i++ {
		chunk = append(chunk, i)
		length += len(d.sentence(i))
		if i != hi-1 && length < target {
			continue
		}
		var a, b []int32
		if len(chunk) == 1 {
			s := d.sentence(chunk[0])
			if len(s) >= 2 {
				cut := 1 + rng.IntN(len(s)-1)
				a, b = append(a, s[:cut]...), append(b, s[cut:]...)
			}
		} else {
			aEnd := 1 + rng.IntN(len(chunk)-1)
			for _, s := range chunk[:aEnd] {
				a = append(a, d.sentence(s)...)
			}
			for _, s := range chunk[aEnd:] {
				b = append(b, d.sentence(s)...)
			}
		}
		swapped := rng.Float64() < 0.5
		if swapped {
			a, b = b, a
		}
		a, b = p.truncate(a, b, maxTokens, rng)
		if len(a) > 0 && len(b) > 0 {
			p.add(a, b, swapped, sp)
		}
		chunk, length = chunk[:0], 0
		target = p.target(cfg, maxTokens, rng)
	}
}
