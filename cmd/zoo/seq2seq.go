package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/internal/heatmap"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/pretrain"
)

// trainFlags are the flags pretraining and fine-tuning a seq2seq share.
type trainFlags struct {
	cfgPath, run, initFrom *string
	steps, batch, warmup   *int
	seed                   *uint64
	resume                 *bool
}

func addTrainFlags(fs *flag.FlagSet) trainFlags {
	return trainFlags{
		cfgPath:  fs.String("config", "", "JSON config file; flags override it"),
		run:      fs.String("run", "", "run directory (checkpoints, metrics.jsonl, loss.png)"),
		initFrom: fs.String("init-from", "", "start from this seq2seq checkpoint (model and tokenizer)"),
		steps:    fs.Int("max-steps", 0, "optimizer steps"),
		batch:    fs.Int("batch-size", 0, "pairs per batch"),
		warmup:   fs.Int("warmup-steps", 0, "warmup steps of the inverse-square-root schedule"),
		seed:     fs.Uint64("seed", 0, "seed of initialisation, batches, noise and dropout"),
		resume:   fs.Bool("resume", false, "continue from the run directory's latest checkpoint"),
	}
}

func (f trainFlags) apply(c *seq2seq.TrainConfig) {
	if *f.run != "" {
		c.RunDir = *f.run
	}
	if *f.initFrom != "" {
		c.InitFrom = *f.initFrom
	}
	if *f.steps > 0 {
		c.Steps = *f.steps
	}
	if *f.batch > 0 {
		c.Batch = *f.batch
	}
	if *f.warmup > 0 {
		c.Warmup = *f.warmup
	}
	if *f.seed > 0 {
		c.Seed = *f.seed
	}
	c.Resume = c.Resume || *f.resume
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runPretrainSeq2Seq is `zoo pretrain seq2seq --corpus TEXT [flags]`.
func runPretrainSeq2Seq(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("zoo pretrain seq2seq", flag.ContinueOnError)
	tf := addTrainFlags(fs)
	corpus := fs.String("corpus", "", "monolingual text, one example per line (file, directory or glob)")
	if help, err := parse(fs, args, stdout, "usage: zoo pretrain seq2seq --corpus TEXT [flags]\n\nDenoising pretraining (BART-style span masking and sentence permutation) of the encoder-decoder Transformer."); help || err != nil {
		return err
	}
	cfg := pretrain.DefaultSeq2Seq()
	if *tf.cfgPath != "" {
		var err error
		if cfg, err = pretrain.ReadSeq2SeqConfig(*tf.cfgPath, cfg); err != nil {
			return err
		}
	}
	tf.apply(&cfg.TrainConfig)
	if *corpus != "" {
		cfg.Corpus = *corpus
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunSeq2Seq(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.RunDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, validation loss %.4f\ncheckpoint: %s\nnext: zoo finetune seq2seq --init-from %s --data PAIRS.tsv\n", res.Steps, res.ValLoss, res.Final, res.Final)
	return nil
}

// runFinetuneSeq2Seq is `zoo finetune seq2seq --data PAIRS.tsv [flags]`.
func runFinetuneSeq2Seq(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("zoo finetune seq2seq", flag.ContinueOnError)
	tf := addTrainFlags(fs)
	data := fs.String("data", "", "TSV of source<TAB>target lines")
	src := fs.String("src-file", "", "source sentences, one per line (with --tgt-file)")
	tgt := fs.String("tgt-file", "", "target sentences, aligned with --src-file")
	if help, err := parse(fs, args, stdout, "usage: zoo finetune seq2seq (--data PAIRS.tsv | --src-file S --tgt-file T) [--init-from CKPT] [flags]\n\nTrains translation, from scratch or from a pretrained checkpoint, then scores the held-out pairs with BLEU and chrF."); help || err != nil {
		return err
	}
	cfg := finetune.DefaultTranslation()
	if *tf.cfgPath != "" {
		var err error
		if cfg, err = finetune.ReadTranslationConfig(*tf.cfgPath, cfg); err != nil {
			return err
		}
	}
	tf.apply(&cfg.TrainConfig)
	if *data != "" {
		cfg.Data = *data
	}
	if *src != "" || *tgt != "" {
		cfg.SrcFile, cfg.TgtFile = *src, *tgt
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.RunTranslation(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.RunDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps in %.0f s, validation loss %.4f\ncheckpoint: %s\nresults: %s\nnext: zoo translate --checkpoint %s\n",
		res.Steps, res.TrainSeconds, res.ValLoss, res.Final, filepath.Join(cfg.RunDir, "results.json"), res.Final)
	return nil
}

// loadSeq2Seq reads a checkpoint and its tokenizer.
func loadSeq2Seq(dir string) (*seq2seq.Model, datasets.Tokenizer, error) {
	m, err := seq2seq.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	tok, err := datasets.LoadTokenizer(filepath.Join(dir, seq2seq.TokenizerFile))
	if err != nil {
		return nil, nil, err
	}
	return m, tok, nil
}

// runTranslate is `zoo translate --checkpoint DIR [--input FILE] …`.
func runTranslate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("zoo translate", flag.ContinueOnError)
	ckpt := fs.String("checkpoint", "", "seq2seq checkpoint directory (with tokenizer.json)")
	input := fs.String("input", "", "file of sentences, one per line (default: standard input)")
	beam := fs.Int("beam", 4, "beam size")
	greedy := fs.Bool("greedy", false, "greedy decoding instead of beam search")
	nbest := fs.Int("nbest", 1, "print the n best translations of each line, with scores")
	alpha := fs.Float64("length-penalty", 0.6, "GNMT length penalty α")
	attention := fs.String("attention", "", "write the cross-attention map of the first sentence to this PNG")
	layer := fs.Int("layer", 0, "with --attention: decoder layer to draw, 1-based (default: the last)")
	if help, err := parse(fs, args, stdout, "usage: zoo translate --checkpoint DIR [--input FILE] [--beam N | --greedy] [--attention map.png]"); help || err != nil {
		return err
	}
	if *ckpt == "" {
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	}
	m, tok, err := loadSeq2Seq(*ckpt)
	if err != nil {
		return err
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
		if strings.TrimSpace(l) != "" {
			texts, at = append(texts, l), append(at, i)
		}
	}
	out := make([]string, len(lines))
	dc := seq2seq.DecodeConfig{Beam: *beam, NBest: *nbest, LengthPenalty: *alpha}
	if *greedy {
		dc.Beam, dc.NBest = 1, 1
	}
	var cands [][]seq2seq.Candidate
	if len(texts) > 0 {
		var rep seq2seq.TranslateReport
		if cands, rep, err = seq2seq.Translate(m, tok, texts, dc, *greedy, 32, nil); err != nil {
			return err
		}
		if rep.Truncated > 0 {
			fmt.Fprintf(os.Stderr, "zoo translate: %d lines longer than max_len %d were truncated\n", rep.Truncated, m.Config.MaxLen)
		}
	}
	for i, c := range cands {
		var parts []string
		for _, x := range c {
			if *nbest > 1 {
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
		return drawAttention(m, tok, texts[0], cands[0][0].Text, *layer, *attention)
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

// runEvalSeq2Seq is `zoo eval seq2seq --checkpoint DIR --data PAIRS.tsv`.
func runEvalSeq2Seq(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("zoo eval seq2seq", flag.ContinueOnError)
	ckpt := fs.String("checkpoint", "", "seq2seq checkpoint directory (with tokenizer.json)")
	data := fs.String("data", "", "TSV of source<TAB>reference lines")
	beam := fs.Int("beam", 4, "beam size")
	greedy := fs.Bool("greedy", false, "greedy decoding instead of beam search")
	alpha := fs.Float64("length-penalty", 0.6, "GNMT length penalty α")
	limit := fs.Int("limit", 0, "score only the first N pairs")
	if help, err := parse(fs, args, stdout, "usage: zoo eval seq2seq --checkpoint DIR --data PAIRS.tsv [--beam N | --greedy]"); help || err != nil {
		return err
	}
	if *ckpt == "" || *data == "" {
		return fmt.Errorf("%w: give --checkpoint and --data", errUsage)
	}
	m, tok, err := loadSeq2Seq(*ckpt)
	if err != nil {
		return err
	}
	pairs, rep, err := datasets.ReadParallelTSV(*data, datasets.ParallelOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, rep)
	if *limit > 0 && len(pairs) > *limit {
		pairs = pairs[:*limit]
	}
	s, _, err := finetune.ScoreTranslation(m, tok, pairs, seq2seq.DecodeConfig{Beam: *beam, LengthPenalty: *alpha}, *greedy)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s on %d pairs: BLEU %.2f, chrF %.2f\n%s\n", s.Strategy, len(pairs), s.BLEU, s.ChrF, s.BLEUText)
	return nil
}
