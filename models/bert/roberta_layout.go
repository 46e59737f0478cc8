package bert

// PairLayout is how a model type of the BERT family lays out a pair of
// texts (a question and its context): BERT's [CLS] A [SEP] B [SEP] with
// token types 0 then 1; RoBERTa's <s> A </s></s> B </s>, every token type
// 0 (RobertaProcessing, the layout of transformers' run_qa.py with a
// RoBERTa); DistilBERT's [CLS] A [SEP] B [SEP] with no token type ids at
// all (DistilBertTokenizer's model_input_names).
type PairLayout struct {
	// Seps is how many separators stand between the two texts: 1 ([SEP]),
	// 2 (RoBERTa's </s></s>).
	Seps int
	// SecondType is the token type of the second text and its closing
	// separator: 1 (BERT), 0 (RoBERTa, and DistilBERT, which takes none).
	SecondType int
	// TokenTypes is whether the model takes token type ids: false for
	// DistilBERT, whose Inputs.TokenTypes must stay nil.
	TokenTypes bool
}

// PairLayout is the layout of c's model type.
func (c Config) PairLayout() PairLayout {
	v := c.variant()
	switch {
	case v.paddedPositions:
		return PairLayout{Seps: 2, SecondType: 0, TokenTypes: !v.noTokenTypes}
	case v.noTokenTypes:
		return PairLayout{Seps: 1, SecondType: 0}
	}
	return PairLayout{Seps: 1, SecondType: 1, TokenTypes: true}
}

// Specials is the number of special tokens the layout adds to a pair:
// [CLS], the separators between the texts and the last one (3 for BERT,
// 4 for RoBERTa), so a window of maxSeq tokens leaves
// maxSeq − len(question) − Specials() for the context.
func (l PairLayout) Specials() int { return 2 + l.Seps }

// QAWindows is QAWindows (the windows of a question over its context) in
// the layout: cls question sep×Seps context[window] sep, the context and
// its sep typed SecondType. room is maxSeq − len(question) − Specials().
func (l PairLayout) QAWindows(cls, sep int, question, context []int, room, step int) ([]QAWindow, error) {
	return qaWindows(cls, sep, max(l.Seps, 1), l.SecondType, question, context, room, step)
}
