package main

import (
	"cmp"
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/models/bert"
)

// runFinetuneBERTEmbeddings is `zoo finetune bert --task embeddings
// --init-from DIR --train-file PAIRS`: sentence embeddings fine-tuned with
// MultipleNegativesRankingLoss on (anchor, positive) pairs; checkpoints
// are sentence-transformers folders.
func runFinetuneBERTEmbeddings(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, finetune.DefaultSentencePairs(), finetune.ReadSentencePairsConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune bert", "usage: zoo finetune bert --task embeddings --init-from DIR --train-file PAIRS [--validation-file PAIRS] [flags]\n\nFine-tunes sentence embeddings (a BERT or RoBERTa encoder with pooling) with sentence-transformers' MultipleNegativesRankingLoss: each batch's anchors score its positives by scale × cosine similarity, each anchor's own positive the target, the others its negatives. PAIRS: TSV (anchor TAB positive a line) or JSONL ({\"anchor\", \"positive\"}). Reports retrieval recall@1 and @10 on the validation pairs; checkpoints are sentence-transformers folders (zoo predict --task sentence-similarity reads them).")
	f.String("task", "embeddings", bertTasks)
	f.trainArgs(&cfg.Args, &cfg.Checkpoint, argsHelp{batchWhat: "pairs", warmupWhat: "before the linear decay", initWhat: "a BERT-family checkpoint with tokenizer.json, or a sentence-transformers folder"})
	f.alias("checkpoint", "init-from")
	f.StringVar(&cfg.TrainFile, "train-file", cfg.TrainFile, "pairs to train on (TSV or JSONL)")
	f.StringVar(&cfg.ValFile, "validation-file", cfg.ValFile, "pairs to report retrieval on (default: val_fraction of the training file)")
	f.Float64Var(&cfg.ValFraction, "val-fraction", cfg.ValFraction, "fraction of the training pairs kept for validation when there is no --validation-file")
	f.IntVar(&cfg.MaxLength, "max-length", cfg.MaxLength, "tokens kept per text, special tokens included (0: the model's most)")
	f.StringVar(&cfg.Pooling, "pooling", cfg.Pooling, "a plain checkpoint's pooling: mean, cls or mean_sqrt_len")
	f.BoolVar(&cfg.Normalize, "normalize", cfg.Normalize, "a plain checkpoint's model L2-normalises its embeddings (a Normalize module)")
	f.Float64Var(&cfg.Scale, "scale", cfg.Scale, "the cosine similarities' scale in the loss")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	switch {
	case cfg.Checkpoint == "":
		return fmt.Errorf("%w: --init-from is required: the BERT-family checkpoint (or sentence-transformers folder) to fine-tune", errUsage)
	case cfg.TrainFile == "":
		return fmt.Errorf("%w: --train-file is required (pairs: TSV or JSONL)", errUsage)
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	if cfg.WarmupSteps > cfg.MaxSteps {
		return fmt.Errorf("config: warmup_steps %d must be in [0, max_steps %d]: lower --warmup-steps", cfg.WarmupSteps, cfg.MaxSteps)
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.RunSentencePairs(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps; validation retrieval (%d pairs) recall@1 %.4f, recall@10 %.4f\n", res.Steps, res.Retrieval.Pairs, res.Retrieval.RecallAt1, res.Retrieval.RecallAt10)
	fmt.Fprintln(stdout, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

// loadSentence reads the sentence-transformers folder of j with its
// batch size and, with --normalize, normalisation.
func loadSentence(j *predictJob) (*bert.SentenceEmbeddings, error) {
	s, err := bert.LoadSentenceEmbeddings(j.dir)
	if err != nil {
		return nil, err
	}
	s.BatchSize = j.batch
	s.Normalize = s.Normalize || j.normalize
	return s, nil
}

// predictSentenceEmbeddings is feature extraction from a
// sentence-transformers folder: each text's sentence_embedding.
func predictSentenceEmbeddings(j *predictJob, texts []string) error {
	s, err := loadSentence(j)
	if err != nil {
		return err
	}
	err = chunked(j, len(texts), func(lo, hi int) ([][]float32, error) { return s.Embed(j.ctx, texts[lo:hi]) },
		func(i int, e []float32) error {
			v := make([]float64, len(e))
			for k, x := range e {
				v[k] = float64(x)
			}
			return j.emit(i, struct {
				Embedding []float32 `json:"sentence_embedding"`
			}{e}, func(w io.Writer) {
				fmt.Fprintln(w, oneLine(texts[i]))
				fmt.Fprintf(w, "  sentence_embedding\t(%d)\t%s\n", len(e), vecHead(v))
			})
		})
	if err == nil && !j.asJSON {
		fmt.Fprintln(j.w, "\n(--json for the values)")
	}
	return err
}

// predictSentenceSimilarity is `zoo predict --task sentence-similarity`:
// the similarity of the first input with each of the others, by the
// folder's similarity function (similarity_fn_name: cosine, dot, or the
// negative euclidean or manhattan distance, as sentence-transformers'
// similarity).
func predictSentenceSimilarity(j *predictJob) error {
	texts, err := j.texts("sentence-similarity", false)
	if err != nil {
		return err
	}
	if len(texts) < 2 {
		return fmt.Errorf("%w: sentence-similarity compares the first input with the others: give at least 2 inputs", errUsage)
	}
	s, err := loadSentence(j)
	if err != nil {
		return err
	}
	src, err := s.Embed(j.ctx, texts[:1])
	if err != nil {
		return err
	}
	if !j.asJSON {
		fmt.Fprintf(j.w, "%s similarity with: %s\n", cmp.Or(s.Similarity, "cosine"), oneLine(texts[0]))
	}
	return chunked(j, len(texts)-1, func(lo, hi int) ([][]float32, error) { return s.Embed(j.ctx, texts[1+lo:1+hi]) },
		func(i int, e []float32) error {
			score := bert.Similarity(s.Similarity, src[0], e)
			if j.asJSON {
				return j.emit(i+1, struct {
					Score float64 `json:"score"`
				}{score}, nil)
			}
			_, err := fmt.Fprintf(j.w, "%.4f\t%s\n", score, oneLine(texts[i+1]))
			return err
		})
}
