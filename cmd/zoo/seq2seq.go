package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/internal/heatmap"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/pretrain"
)

// seq2seqFlags binds the flags pretraining and fine-tuning a seq2seq share
// to c.
func seq2seqFlags(f *cmdFlags, c *pretrain.Seq2SeqTrainConfig) {
	f.trainArgs(&c.Args, &c.InitFrom, argsHelp{batchWhat: "pairs", warmupWhat: "of the inverse-square-root schedule", initWhat: "a seq2seq (model and tokenizer)"})
	f.StringVar(&c.Tokenizer, "tokenizer", c.Tokenizer, "a tokenizer.json (default: train a joint byte-level BPE)")
	f.Float64Var(&c.LRFactor, "lr-factor", c.LRFactor, "scales the inverse-square-root schedule; 1 is the paper's")
}

// runPretrainSeq2Seq is `zoo pretrain seq2seq --corpus TEXT [flags]`.
func runPretrainSeq2Seq(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, pretrain.DefaultSeq2Seq(), pretrain.ReadSeq2SeqConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo pretrain seq2seq", "usage: zoo pretrain seq2seq --corpus TEXT [flags]\n\nDenoising pretraining (BART-style span masking and sentence permutation) of the encoder-decoder Transformer.")
	seq2seqFlags(f, &cfg.Seq2SeqTrainConfig)
	f.StringVar(&cfg.Corpus, "corpus", cfg.Corpus, "monolingual text, one example per line (file, directory or glob)")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunSeq2Seq(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, validation loss %.4f\n%s\nnext: zoo finetune seq2seq --init-from %s --data PAIRS.tsv\n",
		res.Steps, res.ValLoss, checkpointLine(res.Final, res.Best, res.BestStep), cmp.Or(res.Best, res.Final))
	return nil
}

// runFinetuneSeq2Seq is `zoo finetune seq2seq --data PAIRS.tsv [flags]`.
func runFinetuneSeq2Seq(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, finetune.DefaultTranslation(), finetune.ReadTranslationConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune seq2seq", "usage: zoo finetune seq2seq (--data PAIRS.tsv | --src-file S --tgt-file T) [--init-from CKPT] [flags]\n\nTrains translation, from scratch or from a pretrained checkpoint, then scores the held-out pairs with BLEU and chrF.")
	seq2seqFlags(f, &cfg.Seq2SeqTrainConfig)
	f.StringVar(&cfg.Data, "data", cfg.Data, "TSV of source<TAB>target lines")
	f.StringVar(&cfg.SrcFile, "src-file", cfg.SrcFile, "source sentences, one per line (with --tgt-file)")
	f.StringVar(&cfg.TgtFile, "tgt-file", cfg.TgtFile, "target sentences, aligned with --src-file")
	f.StringVar(&cfg.TestData, "test-data", cfg.TestData, "TSV of test pairs scored at the end instead of the held-out pairs")
	f.StringVar(&cfg.ValidationData, "validation-data", cfg.ValidationData, "TSV of pairs that validate (loss, predict_with_generate, best checkpoint) instead of held_out pairs drawn from --data by seed")
	f.StringVar(&cfg.Metric, "metric", cfg.Metric, "final scores: bleu (BLEU and chrF) or g2p (word and phoneme error rates over every reference of a source)")
	f.IntVar(&cfg.Beam, "beam", cfg.Beam, "beam size of the final scores")
	f.Float64Var(&cfg.LengthPenalty, "length-penalty", cfg.LengthPenalty, "length penalty α of the final scores (see --length-penalty-style)")
	f.StringVar(&cfg.LengthPenaltyStyle, "length-penalty-style", cfg.LengthPenaltyStyle, "how --length-penalty ranks the final beams: gnmt (((5+|y|)/6)^α) or hf (|y|^α, Hugging Face's length_penalty)")
	f.BoolVar(&cfg.ExportIDs, "export-ids", cfg.ExportIDs, "write the encoded pairs to RUN/ids/{train,valid,test}.jsonl (for tools/pytorch/train_seq2seq.py)")
	f.StringVar(&cfg.EarlyStopping, "early-stopping", cfg.EarlyStopping, "beam search of the final scores: true, false or never (Hugging Face's early_stopping)")
	f.StringVar(&cfg.DistillFrom, "distill-from", cfg.DistillFrom, "token-level distillation: teacher checkpoint(s), comma-separated (an ensemble), with the student's tokenizer; each target becomes (1-alpha)·the reference + alpha·the teacher's next-token distribution")
	f.Float64Var(&cfg.DistillAlpha, "distill-alpha", cfg.DistillAlpha, "with --distill-from: the teacher's share of each target, in (0, 1]")
	f.IntVar(&cfg.DistillTopK, "distill-top-k", cfg.DistillTopK, "with --distill-from: the teacher's most probable tokens kept at each position")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if cfg.InitFrom != "" {
		if err := expectFamily(cfg.InitFrom, "seq2seq"); err != nil {
			return err
		}
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.RunTranslation(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps in %.0f s, validation loss %.4f\n%s\nresults: %s\nnext: zoo translate --checkpoint %s\n",
		res.Steps, res.TrainSeconds, res.ValLoss, checkpointLine(res.Final, res.Best, res.BestStep), filepath.Join(cfg.OutputDir, "results.json"), cmp.Or(res.Best, res.Final))
	return nil
}

// loadEnsemble reads the checkpoints of a --checkpoint list, DIR or
// DIR1,DIR2,…: one model, or several decoding as an ensemble, which must
// have the same tokenizer.json byte for byte (seq2seq.LoadEnsemble).
func loadEnsemble(list string) (seq2seq.Ensemble, datasets.Tokenizer, error) {
	for i, dir := range strings.Split(list, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			return nil, nil, fmt.Errorf("%w: --checkpoint %q: checkpoint %d of the list is empty", errUsage, list, i+1)
		}
		if err := expectFamily(dir, "seq2seq"); err != nil {
			return nil, nil, err
		}
	}
	e, tok, err := seq2seq.LoadEnsemble(list)
	if err != nil {
		return nil, nil, fmt.Errorf("--checkpoint: %w", err)
	}
	return e, tok, nil
}

// translateBatch is how many lines zoo translate decodes at once.
const translateBatch = 32

// runTranslate is `zoo translate --checkpoint DIR [--input FILE] …`.
func runTranslate(args []string, stdout io.Writer) error {
	fs := newFlags("zoo translate", "usage: zoo translate --checkpoint DIR[,DIR…] [--input FILE] [--beam N | --greedy] [--attention map.png]")
	ckpt := fs.String("checkpoint", "", "seq2seq checkpoint directory (with tokenizer.json); several, comma-separated, decode as an ensemble (the mean of their next-token probabilities)")
	input := fs.String("input", "", "file of sentences, one per line (default: standard input)")
	df := addDecodeFlags(fs, true)
	attention := fs.String("attention", "", "write the cross-attention map of the first sentence to this PNG")
	layer := fs.Int("layer", 0, "with --attention: decoder layer to draw, 1-based (default: the last)")
	if help, err := fs.parse(args, stdout); help || err != nil {
		return err
	}
	if *ckpt == "" {
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	}
	e, tok, err := loadEnsemble(*ckpt)
	if err != nil {
		return err
	}
	if *attention != "" && len(e) > 1 {
		return fmt.Errorf("%w: --attention draws one model's attention: give one --checkpoint", errUsage)
	}
	var r io.Reader = os.Stdin
	if *input != "" {
		f, err := os.Open(*input)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var texts []string
	var at []int // the line of each text; blank lines are echoed blank
	for i, l := range lines {
		if strings.TrimSpace(l) != "" { // seq2seq.Translate trims
			texts, at = append(texts, l), append(at, i)
		}
	}
	out := make([]string, len(lines))
	dc, err := df.config(fs, *ckpt, e)
	if err != nil {
		return err
	}
	maxLen := e.MaxLen()
	if err := models.CheckMemory(e.DecodeBytes(translateBatch, dc.Beam, maxLen, maxLen),
		fmt.Sprintf("translate: %d lines at a time with --beam %d", translateBatch, dc.Beam), "lower --beam"); err != nil {
		return err
	}
	var cands [][]seq2seq.Candidate
	if len(texts) > 0 {
		var rep seq2seq.TranslateReport
		before := datasets.Unknowns(tok)
		if cands, rep, err = e.Translate(context.Background(), tok, texts, dc, *df.greedy, translateBatch, nil); err != nil {
			return err
		}
		noteUnknowns(os.Stderr, tok, before, "the input")
		if rep.Truncated > 0 {
			fmt.Fprintf(os.Stderr, "zoo translate: %d lines longer than max_len %d were truncated\n", rep.Truncated, maxLen)
		}
	}
	for i, c := range cands {
		var parts []string
		for _, x := range c {
			if dc.NBest > 1 {
				parts = append(parts, fmt.Sprintf("%.4f\t%s", x.Score, x.Text))
			} else {
				parts = append(parts, x.Text)
			}
		}
		out[at[i]] = strings.Join(parts, "\n")
	}
	for _, l := range out {
		fmt.Fprintln(stdout, l)
	}
	if *attention != "" {
		if len(texts) == 0 {
			return fmt.Errorf("--attention: no sentence to draw")
		}
		return drawAttention(e[0], tok, texts[0], cands[0][0].Text, *layer, *attention)
	}
	return nil
}

// drawAttention writes the cross-attention of one layer (every head and
// their average) for a sentence and its translation.
func drawAttention(m *seq2seq.Model, tok datasets.Tokenizer, src, tgt string, layer int, path string) error {
	srcIDs, err := tok.Encode(src)
	if err != nil {
		return err
	}
	srcIDs = srcIDs[:min(len(srcIDs), m.Config.MaxLen-1)]
	tgtIDs, err := tok.Encode(tgt)
	if err != nil {
		return err
	}
	tgtIDs = tgtIDs[:min(len(tgtIDs), m.Config.MaxLen-1)]
	maps, err := m.CrossAttention(srcIDs, tgtIDs)
	if err != nil {
		return err
	}
	if layer == 0 {
		layer = len(maps)
	}
	if layer < 1 || layer > len(maps) {
		return fmt.Errorf("--layer %d: the decoder has layers 1 to %d", layer, len(maps))
	}
	pieces := func(ids []int) ([]string, error) {
		out := make([]string, len(ids))
		for i, id := range ids {
			s, err := tok.Decode([]int{id})
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	cols, err := pieces(srcIDs)
	if err != nil {
		return err
	}
	rows, err := pieces(tgtIDs)
	if err != nil {
		return err
	}
	fig := heatmap.Figure{
		Title: fmt.Sprintf("cross-attention, decoder layer %d: %q → %q", layer, src, tgt),
		Rows:  append([]string{"<s>"}, rows...), // row i predicts target token i (the last row, </s>)
		Cols:  append(cols, "</s>"),
	}
	for h, w := range maps[layer-1] {
		fig.Panels = append(fig.Panels, heatmap.Panel{Title: fmt.Sprintf("head %d", h+1), Weights: w})
	}
	avg, err := heatmap.Average("average of heads", fig.Panels)
	if err != nil {
		return err
	}
	fig.Panels = append(fig.Panels, avg)
	return heatmap.WritePNG(path, fig)
}

// runEvalSeq2Seq is `zoo eval --checkpoint DIR --data PAIRS.tsv` for a
// seq2seq checkpoint.
func runEvalSeq2Seq(args []string, stdout io.Writer) error {
	fs := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR[,DIR…] --data PAIRS.tsv [--beam N | --greedy] [--metric bleu|g2p]\n       zoo eval seq2seq --data PAIRS.tsv --hypotheses OUTPUTS.txt [--metric bleu|g2p]\n\nScores a seq2seq checkpoint on held-out pairs with corpus BLEU and chrF, or word and phoneme error rates (--metric g2p); or scores a file of outputs, one per line (one per pair; with --metric g2p one per distinct source, in order of first appearance).")
	ckpt := fs.String("checkpoint", "", "seq2seq checkpoint directory (with tokenizer.json); several, comma-separated, decode as an ensemble")
	data := fs.String("data", "", "TSV of source<TAB>reference lines")
	hypotheses := fs.String("hypotheses", "", "score this file of outputs instead of decoding (no checkpoint needed)")
	metric := fs.String("metric", "bleu", "bleu (BLEU and chrF) or g2p (word and phoneme error rates over every reference of a source)")
	df := addDecodeFlags(fs, false)
	limit := fs.Int("limit", 0, "score only the first N pairs (words with --metric g2p)")
	if help, err := fs.parse(args, stdout); help || err != nil {
		return err
	}
	if (*ckpt == "") == (*hypotheses == "") || *data == "" {
		return fmt.Errorf("%w: give --data and either --checkpoint or --hypotheses", errUsage)
	}
	if _, err := decode.ParseStopping(*df.stopping); err != nil {
		return fmt.Errorf("%w: --early-stopping: %v", errUsage, err)
	}
	pairs, rep, err := datasets.ReadParallelTSV(*data, datasets.ParallelOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, rep)
	sc, err := finetune.NewScorer(*metric, pairs, *limit)
	if err != nil {
		return err
	}
	var s finetune.TranslationScores
	if *hypotheses != "" {
		b, err := os.ReadFile(*hypotheses)
		if err != nil {
			return err
		}
		hyps := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(b) == 0 {
			hyps = nil
		}
		if len(hyps) < len(sc.Sources) {
			return fmt.Errorf("%s has %d lines for %d outputs to score: one line per output, in the data's order", *hypotheses, len(hyps), len(sc.Sources))
		}
		if s, err = sc.Score(hyps[:len(sc.Sources)]); err != nil {
			return err
		}
		s.Strategy = *hypotheses
	} else {
		e, tok, err := loadEnsemble(*ckpt)
		if err != nil {
			return err
		}
		dc, err := df.config(fs, *ckpt, e)
		if err != nil {
			return err
		}
		if err := noteSourceUnknowns(stdout, tok, sc.Sources); err != nil {
			return err
		}
		if s, _, err = sc.Decode(context.Background(), e, tok, dc, *df.greedy); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s on %d %s: %s\n", s.Strategy, len(sc.Sources), sc.Unit(), sc.Line(s))
	if s.BLEUText != "" {
		fmt.Fprintln(stdout, s.BLEUText)
	}
	return nil
}

// decodeFlags are the decoding flags of zoo translate and zoo eval.
type decodeFlags struct {
	beam, nbest     *int
	alpha           *float64
	style, stopping *string
	greedy          *bool
}

func addDecodeFlags(fs *cmdFlags, nbest bool) decodeFlags {
	d := decodeFlags{
		beam:     fs.Int("beam", 4, "beam size (default: the checkpoint's num_beams, else 4)"),
		greedy:   fs.Bool("greedy", false, "greedy decoding instead of beam search"),
		alpha:    fs.Float64("length-penalty", 0.6, "length penalty α (default: the checkpoint's length_penalty, in Hugging Face's style, else 0.6, GNMT's)"),
		style:    fs.String("length-penalty-style", "gnmt", "gnmt: score = log P / ((5+|y|)/6)^α (Wu et al. 2016); hf: log P / |y|^α (Hugging Face's length_penalty; the default when α is the checkpoint's)"),
		stopping: fs.String("early-stopping", "true", "when beam search is done with a line, as Hugging Face's early_stopping: true (once beam hypotheses have finished), false (once the best open beam falls below them) or never (once no open beam can beat them) (default: the checkpoint's early_stopping, else true)"),
	}
	one := 1
	d.nbest = &one
	if nbest {
		d.nbest = fs.Int("nbest", 1, "print the n best translations of each line, with scores (default: the checkpoint's num_return_sequences, else 1)")
	}
	return d
}

// config is the decoding the flags ask for, over the generation settings of
// the first checkpoint of list (generation_config.json or config.json),
// which give the defaults of the flags not set and the rules every
// decoding follows (seq2seq.DecodeConfig). Notes on settings that are not
// applied go to stderr.
func (d decodeFlags) config(fs *cmdFlags, list string, e seq2seq.Ensemble) (seq2seq.DecodeConfig, error) {
	first := strings.TrimSpace(strings.Split(list, ",")[0])
	gen, err := seq2seq.ReadGeneration(first, e[0].Config)
	if err != nil {
		return seq2seq.DecodeConfig{}, err
	}
	for _, n := range gen.Notes {
		fmt.Fprintf(os.Stderr, "zoo: note: %s: %s\n", filepath.Join(first, gen.From), n)
	}
	style := *d.style
	if !fs.isSet("beam") && gen.NumBeams != nil {
		*d.beam = *gen.NumBeams
	}
	if !fs.isSet("nbest") && gen.NumReturnSequences != nil && fs.Lookup("nbest") != nil {
		*d.nbest = *gen.NumReturnSequences
	}
	if !fs.isSet("length-penalty") && gen.LengthPenalty != nil {
		*d.alpha = *gen.LengthPenalty
		if !fs.isSet("length-penalty-style") {
			style = "hf"
		}
	}
	if !fs.isSet("early-stopping") && gen.EarlyStopping != nil {
		*d.stopping = gen.EarlyStopping.String()
	}
	ps, err := decode.ParseLengthPenaltyStyle(style)
	if err != nil {
		return seq2seq.DecodeConfig{}, fmt.Errorf("%w: --length-penalty-style: %v", errUsage, err)
	}
	stop, err := decode.ParseStopping(*d.stopping)
	if err != nil {
		return seq2seq.DecodeConfig{}, fmt.Errorf("%w: --early-stopping: %v", errUsage, err)
	}
	dc := seq2seq.DecodeConfig{Beam: *d.beam, NBest: *d.nbest, LengthPenalty: *d.alpha, LengthPenaltyStyle: ps, EarlyStopping: stop, Generation: &gen}
	if *d.greedy {
		dc.Beam, dc.NBest = 1, 1
	}
	if err := dc.Validate(); err != nil {
		return dc, err
	}
	return dc, nil
}

// noteSourceUnknowns encodes the sources once, as decoding them does, and
// notes the words or characters that become the unknown token.
func noteSourceUnknowns(w io.Writer, tok datasets.Tokenizer, srcs []string) error {
	before := datasets.Unknowns(tok)
	for _, src := range srcs {
		if _, err := tok.Encode(src); err != nil {
			return err
		}
	}
	noteUnknowns(w, tok, before, "the sources")
	return nil
}
