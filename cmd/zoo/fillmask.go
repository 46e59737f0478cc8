package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// fillMaskBatch is how many texts zoo fill-mask runs at once.
const fillMaskBatch = 8

// runFillMask is `zoo fill-mask --checkpoint DIR [--top-k 5] "text with
// [MASK]" ...`: transformers' fill-mask pipeline on a BERT checkpoint.
func runFillMask(args []string, stdout io.Writer) error {
	fs := newFlags("zoo fill-mask", `usage: zoo fill-mask --checkpoint DIR [--top-k N] [--input FILE] ["text with [MASK]" ...]

Predicts the word behind each [MASK] of each text with a BERT checkpoint
that has its masked-LM head (BertForPreTraining or BertForMaskedLM), as
Hugging Face's fill-mask pipeline: the top-k tokens with their softmax
scores and the text filled in. Texts come from the arguments, or from
--input, one per line (- for standard input).`)
	ckpt := fs.String("checkpoint", "", "BERT checkpoint directory (with tokenizer.json)")
	topK := fs.Int("top-k", bert.DefaultTopK, "candidates per [MASK]")
	input := fs.String("input", "", "file of texts, one per line; - for standard input")
	asJSON := fs.Bool("json", false, "print each text's result as one JSON line, the pipeline's output (score, token, token_str, sequence)")
	help, texts, err := fs.parseTexts(args, stdout)
	if help || err != nil {
		return err
	}
	if *ckpt == "" {
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	}
	if *topK < 1 {
		return fmt.Errorf("%w: --top-k %d must be at least 1", errUsage, *topK)
	}
	if *input != "" {
		if len(texts) > 0 {
			return fmt.Errorf("%w: give texts as arguments or --input, not both", errUsage)
		}
		if texts, err = readLines(*input); err != nil {
			return err
		}
	}
	if len(texts) == 0 {
		return fmt.Errorf("%w: no text: give one with [MASK] as an argument, or --input FILE", errUsage)
	}
	m, tok, err := loadMaskedLM(*ckpt)
	if err != nil {
		return err
	}
	unk := datasets.Unknowns(tok)
	defer noteUnknowns(stderr, tok, unk, "the texts")
	for start := 0; start < len(texts); start += fillMaskBatch {
		chunk := texts[start:min(start+fillMaskBatch, len(texts))]
		res, err := bert.FillMaskBatch(m, tok, chunk, *topK)
		if err != nil {
			return withLine(err, start)
		}
		for i, fills := range res {
			if err := printFills(stdout, chunk[i], fills, *asJSON); err != nil {
				return err
			}
		}
	}
	return nil
}

// withLine numbers a text error of a chunk starting at text start among
// all the texts.
func withLine(err error, start int) error {
	var te *bert.TextError
	if errors.As(err, &te) {
		te.Index += start
	}
	return err
}

// printFills prints one text's fills as rows of score, token and sequence,
// one block per [MASK], or as one JSON line shaped as the pipeline's
// output: a list of candidates, or a list of lists for several masks.
func printFills(w io.Writer, text string, fills [][]bert.Fill, asJSON bool) error {
	if asJSON {
		type row struct {
			Score    float64 `json:"score"`
			Token    int     `json:"token"`
			TokenStr string  `json:"token_str"`
			Sequence string  `json:"sequence"`
		}
		lists := make([][]row, len(fills))
		for i, fs := range fills {
			lists[i] = make([]row, len(fs))
			for j, f := range fs {
				lists[i][j] = row{f.Score, f.TokenID, f.Token, f.Sequence}
			}
		}
		var v any = lists
		if len(lists) == 1 {
			v = lists[0]
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	fmt.Fprintf(w, "%s\n", text)
	for i, fs := range fills {
		if len(fills) > 1 {
			fmt.Fprintf(w, "  [MASK] %d of %d\n", i+1, len(fills))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  score\ttoken\tsequence")
		for _, f := range fs {
			fmt.Fprintf(tw, "  %.4f\t%s\t%s\n", f.Score, f.Token, f.Sequence)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// loadMaskedLM reads a BERT checkpoint with its masked-LM head, and its
// WordPiece tokenizer (a RoBERTa one: lm_head and its byte-level BPE). A
// checkpoint without the head (a classifier's) is an error: its
// predictions would come from an untrained head.
func loadMaskedLM(dir string) (*bert.ForMaskedLM, bert.Tokenizer, error) {
	if err := expectFamily(dir, "bert"); err != nil {
		return nil, nil, err
	}
	m, rep, err := bert.LoadForMaskedLM(dir)
	if err != nil {
		return nil, nil, err
	}
	head := "cls.predictions"
	switch m.Config.ModelType {
	case bert.RobertaModelType:
		head = "lm_head"
	case bert.DistilBertModelType:
		head = "vocab_transform"
	case bert.AlbertModelType:
		head = "predictions"
	case bert.ElectraModelType:
		head = "generator_predictions"
	}
	for _, name := range rep.Created {
		if strings.HasPrefix(name, head+".") {
			return nil, nil, fmt.Errorf("checkpoint %s has no masked-LM head (%s): fill-mask needs a pretraining or masked-LM checkpoint, such as zoo pretrain bert's", dir, head)
		}
	}
	if m.Config.ModelType == bert.AlbertModelType {
		tok, err := loadAlbertTokenizer(dir, m.Config.VocabSize)
		return m, tok, err
	}
	if m.Config.ModelType == bert.RobertaModelType {
		t, err := models.LoadTokenizer(dir)
		if err != nil {
			return nil, nil, err
		}
		tok, ok := t.(bert.Tokenizer)
		if !ok || t.VocabSize() > m.Config.VocabSize {
			return nil, nil, fmt.Errorf("checkpoint %s: tokenizer.json is a %T of %d ids, not RoBERTa's byte-level BPE with RobertaProcessing within the model's vocabulary of %d", dir, t, t.VocabSize(), m.Config.VocabSize)
		}
		return m, tok, nil
	}
	tok, err := loadWordPiece(dir, m.Config.VocabSize)
	if err != nil {
		return nil, nil, err
	}
	return m, tok, nil
}

// loadWordPiece reads a checkpoint's tokenizer.json, which must be BERT's
// WordPiece with no more ids than the model's vocabulary of vocabSize.
func loadWordPiece(dir string, vocabSize int) (*datasets.WordPiece, error) {
	t, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, err
	}
	tok, ok := t.(*datasets.WordPiece)
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: tokenizer.json is a %T, not BERT's WordPiece", dir, t)
	}
	if tok.VocabSize() > vocabSize {
		return nil, fmt.Errorf("checkpoint %s: the tokenizer has %d ids but the model's vocabulary is %d (vocab_size): the tokenizer.json does not belong to this model", dir, tok.VocabSize(), vocabSize)
	}
	return tok, nil
}

// readLines reads the non-blank lines of path, or of standard input for
// "-".
func readLines(path string) ([]string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		if l := sc.Text(); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

// parseTexts is parse for a command whose arguments are texts: flags may
// come before, between or after them, and everything after "--" is text.
func (f *cmdFlags) parseTexts(args []string, w io.Writer) (help bool, texts []string, err error) {
	var msg strings.Builder
	f.SetOutput(&msg)
	f.Usage = func() {}
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.SetOutput(w)
				fmt.Fprintln(w, f.usage+"\n\nFlags:")
				f.PrintDefaults()
				return true, nil, nil
			}
			return false, nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		rest := f.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return false, append(texts, rest...), nil
		}
		if len(rest) == 0 {
			return false, texts, nil
		}
		texts, args = append(texts, rest[0]), rest[1:]
	}
}
