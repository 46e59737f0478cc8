package datasets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// WordPieceSpecials are the special tokens of a WordPiece tokenizer
// trained by TrainWordPiece, at ids 0 to 4 in this order. bert-base
// numbers them [PAD]=0, [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103;
// ours come first, as Hugging Face's BertWordPieceTokenizer.train puts
// them.
var WordPieceSpecials = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

// WordPieceOptions are the settings of TrainWordPiece.
type WordPieceOptions struct {
	// VocabSize is the largest vocabulary to learn, specials included.
	VocabSize int
	// MinFrequency is the least count of a pair to be merged; 0 means 2,
	// BertWordPieceTokenizer's default.
	MinFrequency int
	// LimitAlphabet keeps only the most frequent characters (the others
	// are dropped from the words before merging, and encode as [UNK]); 0
	// means 1000, BertWordPieceTokenizer's default.
	LimitAlphabet int
	// Lowercase and StripAccents set the BertNormalizer (written
	// explicitly, never null).
	Lowercase, StripAccents bool
}

// TrainWordPiece trains BERT's WordPiece tokenizer on the corpus with
// Hugging Face's algorithm (tokenizers' WordPieceTrainer,
// src/models/wordpiece/trainer.rs): the text is normalized
// (BertNormalizer) and split into words (BertPreTokenizer); a BPE is
// trained on the words, with every character after a word's first written
// with the "##" prefix, and a merge of "a" and "##b" making "ab"
// (src/models/bpe/trainer.rs; the merge loop is TrainBPE's); its
// vocabulary is the WordPiece vocabulary. The vocabulary is
// WordPieceSpecials, the alphabet in code point order, the "##"
// characters in order of first appearance in the sorted words, then one
// token per merge.
//
// Special tokens written in the text are cut out before counting words.
// The result saves as a standard tokenizer.json (Save) and vocab.txt
// (SaveVocab).
func TrainWordPiece(ctx context.Context, c *Corpus, opts WordPieceOptions) (*WordPiece, error) {
	return trainWordPiece(ctx, c, opts)
}

// TrainWordPieceTexts is TrainWordPiece on texts held in memory.
func TrainWordPieceTexts(ctx context.Context, texts []string, opts WordPieceOptions) (*WordPiece, error) {
	return trainWordPiece(ctx, textList(texts), opts)
}

func trainWordPiece(ctx context.Context, c textSource, opts WordPieceOptions) (*WordPiece, error) {
	const prefix = "##"
	if opts.VocabSize < len(WordPieceSpecials) {
		return nil, fmt.Errorf("datasets: train WordPiece: vocabulary size %d is below the %d special tokens", opts.VocabSize, len(WordPieceSpecials))
	}
	minFreq, limit := opts.MinFrequency, opts.LimitAlphabet
	if minFreq <= 0 {
		minFreq = 2
	}
	if limit <= 0 {
		limit = 1000
	}
	pre := &WordPiece{norm: &bertNormalizer{cleanText: true, chinese: true, stripAccents: opts.StripAccents, lowercase: opts.Lowercase}, split: true}
	counts := make(map[string]int)
	err := c.EachContext(ctx, func(text string) error {
		for _, piece := range splitSpecials(text, WordPieceSpecials) {
			bertWords(pre.normalize(piece), func(w string) { counts[w]++ })
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("datasets: train WordPiece: %w", err)
	}

	keys := make([]string, 0, len(counts))
	alphabet := make(map[rune]int)
	for k, n := range counts {
		keys = append(keys, k)
		for _, r := range k {
			alphabet[r] += n
		}
	}
	slices.Sort(keys)
	chars := make([]rune, 0, len(alphabet))
	for r := range alphabet {
		chars = append(chars, r)
	}
	// Keep the limit most frequent characters (ties to the smaller code
	// point), then order them by code point.
	slices.SortFunc(chars, func(a, b rune) int {
		if alphabet[a] != alphabet[b] {
			return alphabet[b] - alphabet[a]
		}
		return int(a - b)
	})
	chars = chars[:min(len(chars), limit)]
	slices.Sort(chars)

	vocab := slices.Clone(WordPieceSpecials)
	// Grown with the merges, not sized by VocabSize: that is only an upper
	// bound (a user's flag), and the corpus may never reach it (issue 34:
	// 1e9 ran out of memory).
	ids := make(map[string]int, len(vocab))
	for i, s := range vocab {
		ids[s] = i
	}
	for _, r := range chars {
		if _, ok := ids[string(r)]; !ok {
			ids[string(r)] = len(vocab)
			vocab = append(vocab, string(r))
		}
	}
	words := make([][]int, len(keys))
	freq := make([]int, len(keys))
	for wi, k := range keys {
		freq[wi] = counts[k]
		i := 0
		for _, r := range k {
			s := string(r)
			if _, ok := ids[s]; !ok {
				continue // outside the kept alphabet
			}
			if i > 0 {
				s = prefix + s
				if _, ok := ids[s]; !ok {
					ids[s] = len(vocab)
					vocab = append(vocab, s)
				}
			}
			words[wi] = append(words[wi], ids[s])
			i++
		}
	}
	join := func(a, b string) string { return a + strings.TrimPrefix(b, prefix) }
	vocab, _, err = learnMerges(ctx, vocab, ids, words, freq, opts.VocabSize, minFreq, join)
	if err != nil {
		return nil, fmt.Errorf("datasets: train WordPiece: %w", err)
	}
	raw, err := marshalWordPiece(vocab, opts.Lowercase, &opts.StripAccents)
	if err != nil {
		return nil, fmt.Errorf("datasets: train WordPiece: %w", err)
	}
	t, _, err := parseWordPiece(raw)
	if err != nil {
		return nil, fmt.Errorf("datasets: train WordPiece: load the trained tokenizer: %w", err)
	}
	return t, nil
}

// wordPieceFile is a WordPiece tokenizer.json as tokenizers'
// BertWordPieceTokenizer saves it.
type wordPieceFile struct {
	Version       string         `json:"version"`
	Truncation    any            `json:"truncation"`
	Padding       any            `json:"padding"`
	AddedTokens   []hfAddedToken `json:"added_tokens"`
	Normalizer    bertNormJSON   `json:"normalizer"`
	PreTokenizer  typed          `json:"pre_tokenizer"`
	PostProcessor templateJSON   `json:"post_processor"`
	Decoder       wpDecoderJSON  `json:"decoder"`
	Model         wpModelJSON    `json:"model"`
}

type bertNormJSON struct {
	Type         string `json:"type"`
	CleanText    bool   `json:"clean_text"`
	Chinese      bool   `json:"handle_chinese_chars"`
	StripAccents *bool  `json:"strip_accents"`
	Lowercase    bool   `json:"lowercase"`
}

type templateJSON struct {
	Type          string                   `json:"type"`
	Single        []map[string]templateRef `json:"single"`
	Pair          []map[string]templateRef `json:"pair"`
	SpecialTokens map[string]templateSpec  `json:"special_tokens"`
}

type templateRef struct {
	ID     string `json:"id"`
	TypeID int    `json:"type_id"`
}

type templateSpec struct {
	ID     string   `json:"id"`
	IDs    []int    `json:"ids"`
	Tokens []string `json:"tokens"`
}

type wpDecoderJSON struct {
	Type    string `json:"type"`
	Prefix  string `json:"prefix"`
	Cleanup bool   `json:"cleanup"`
}

type wpModelJSON struct {
	Type     string       `json:"type"`
	Unk      string       `json:"unk_token"`
	Prefix   string       `json:"continuing_subword_prefix"`
	MaxChars int          `json:"max_input_chars_per_word"`
	Vocab    orderedVocab `json:"vocab"`
}

// marshalWordPiece returns the tokenizer.json of a WordPiece vocabulary
// (index = id) with BERT's pipeline: each of WordPieceSpecials in it is an
// added token, and [CLS] and [SEP] make the template. stripAccents nil is
// null (follow lowercase).
func marshalWordPiece(vocab []string, lowercase bool, stripAccents *bool) ([]byte, error) {
	ids := make(map[string]int, len(vocab))
	for id, tok := range vocab {
		if tok == "" {
			return nil, fmt.Errorf("token %d is empty", id)
		}
		if prev, dup := ids[tok]; dup {
			return nil, fmt.Errorf("token %q has ids %d and %d", tok, prev, id)
		}
		ids[tok] = id
	}
	f := wordPieceFile{
		Version:      "1.0",
		AddedTokens:  []hfAddedToken{},
		Normalizer:   bertNormJSON{Type: "BertNormalizer", CleanText: true, Chinese: true, StripAccents: stripAccents, Lowercase: lowercase},
		PreTokenizer: typed{Type: "BertPreTokenizer"},
		Decoder:      wpDecoderJSON{Type: "WordPiece", Prefix: "##", Cleanup: true},
		Model:        wpModelJSON{Type: "WordPiece", Unk: "[UNK]", Prefix: "##", MaxChars: 100, Vocab: vocab},
	}
	for _, s := range WordPieceSpecials {
		if id, ok := ids[s]; ok {
			f.AddedTokens = append(f.AddedTokens, hfAddedToken{ID: id, Content: s, Special: true})
		}
	}
	slices.SortFunc(f.AddedTokens, func(a, b hfAddedToken) int { return a.ID - b.ID })
	cls, okC := ids["[CLS]"]
	sep, okS := ids["[SEP]"]
	if !okC || !okS {
		return nil, errors.New("the vocabulary lacks [CLS] or [SEP]")
	}
	ref := func(kind, id string, typ int) map[string]templateRef {
		return map[string]templateRef{kind: {ID: id, TypeID: typ}}
	}
	f.PostProcessor = templateJSON{
		Type:   "TemplateProcessing",
		Single: []map[string]templateRef{ref("SpecialToken", "[CLS]", 0), ref("Sequence", "A", 0), ref("SpecialToken", "[SEP]", 0)},
		Pair: []map[string]templateRef{ref("SpecialToken", "[CLS]", 0), ref("Sequence", "A", 0), ref("SpecialToken", "[SEP]", 0),
			ref("Sequence", "B", 1), ref("SpecialToken", "[SEP]", 1)},
		SpecialTokens: map[string]templateSpec{
			"[CLS]": {ID: "[CLS]", IDs: []int{cls}, Tokens: []string{"[CLS]"}},
			"[SEP]": {ID: "[SEP]", IDs: []int{sep}, Tokens: []string{"[SEP]"}},
		},
	}
	return marshalIndentNoEscape(f)
}

// SaveVocab writes the vocabulary as vocab.txt: one token per line, the
// line number (from 0) its id. A tokenizer whose ids have holes cannot be
// written so.
func (t *WordPiece) SaveVocab(path string) error {
	var b strings.Builder
	for id, tok := range t.Vocab() {
		if tok == "" || strings.ContainsAny(tok, "\r\n") {
			return fmt.Errorf("datasets: save vocab: id %d has no token that fits on a line", id)
		}
		b.WriteString(tok)
		b.WriteByte('\n')
	}
	if err := atomicfile.WriteBytes(path, []byte(b.String())); err != nil {
		return fmt.Errorf("datasets: save vocab: %w", err)
	}
	return nil
}
