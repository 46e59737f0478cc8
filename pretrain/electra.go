package pretrain

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/jsonconfig"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// ElectraConfig is the configuration of ELECTRA pretraining (Clark et al.
// 2020, google-research/electra): replaced-token detection. It is
// BERTConfig (the corpus, tokenizer, data and training keys, and the
// model section, here the discriminator, an ELECTRA config) and the
// generator: an explicit one (Generator), else the discriminator's shape
// at GeneratorSize of its width.
type ElectraConfig struct {
	BERTConfig
	// GeneratorSize is the generator's width as a share of the
	// discriminator's (google-research/electra's generator_hidden_size):
	// hidden_size round(d·share), intermediate_size 4× that,
	// max(1, hidden_size/64) heads, the discriminator's layers and
	// embeddings. 0.25 for ELECTRA-Small.
	GeneratorSize float64 `json:"generator_size"`
	// Generator, when set, is the generator's ELECTRA config instead: a
	// config.json file or a checkpoint directory (its config.json), or the
	// config itself as a JSON object. Its vocab_size, when it gives none,
	// is the discriminator's; its embeddings must match the
	// discriminator's, which it shares.
	Generator json.RawMessage `json:"generator,omitempty"`
	// DiscWeight is λ, the weight of the discriminator's loss: loss =
	// generator MLM loss + λ·discriminator BCE (50, the paper's).
	DiscWeight float64 `json:"disc_weight"`
}

// ElectraSmallShape is ELECTRA-Small's discriminator (12 layers, 256
// wide, embeddings 128, 4 heads, 1024 inner) for max positions.
func ElectraSmallShape(positions int) bert.Config {
	c := bert.ElectraSmall()
	c.MaxPositionEmbeddings = positions
	return c
}

// ElectraTinyShape is a 2-layer ELECTRA 128 wide with embeddings 64 (2
// heads, 512 inner), for tests and smoke runs, for max positions.
func ElectraTinyShape(positions int) bert.Config {
	c := bert.ElectraSmall()
	c.NumHiddenLayers, c.HiddenSize, c.EmbeddingSize, c.NumAttentionHeads, c.IntermediateSize = 2, 128, 64, 2, 512
	c.MaxPositionEmbeddings = positions
	return c
}

// DefaultElectra pretrains ELECTRA-Small (generator a quarter of its
// width, λ 50) at sequence length 128, batch 32, learning rate 5e-4
// (ELECTRA-Small's) with 10% warmup and linear decay, on a WordPiece of
// 16384 tokens trained on the corpus.
func DefaultElectra() ElectraConfig {
	b := DefaultBERT()
	b.Model = ElectraSmallShape(128)
	b.OutputDir = filepath.Join("runs", "electra-pretrain")
	b.DynamicMasking = true // new masks every epoch, as ELECTRA masks on the fly
	return ElectraConfig{BERTConfig: b, GeneratorSize: 0.25, DiscWeight: 50}
}

// ReadElectraConfig reads a JSON config file over base; unknown keys (in
// the model section too) and wrong types are errors.
func ReadElectraConfig(path string, base ElectraConfig) (ElectraConfig, error) {
	cfg, err := train.ReadConfig(path, base, func(c *ElectraConfig) *train.Args { return &c.Args }, "model", func(c *ElectraConfig) any { return bert.Strict(&c.Model) })
	if err != nil {
		return cfg, err
	}
	if cfg.ModelJSON, err = jsonconfig.Section(path, "model"); err != nil {
		return base, err
	}
	return cfg, nil
}

// Validate reports settings that cannot run: BERTConfig's, a model
// section that is not an ELECTRA, and the generator's settings.
func (c ElectraConfig) Validate() error {
	if c.Model.ModelType != bert.ElectraModelType {
		return fmt.Errorf("config: the model (the discriminator) has model type %q: ELECTRA pretraining needs model_type %q", c.Model.ModelType, bert.ElectraModelType)
	}
	if err := c.BERTConfig.Validate(); err != nil {
		return err
	}
	switch {
	case !(c.DiscWeight > 0) || math.IsInf(c.DiscWeight, 0):
		return fmt.Errorf("config: disc_weight %g must be positive (the paper's λ is 50)", c.DiscWeight)
	case len(c.Generator) == 0 && !(c.GeneratorSize > 0 && c.GeneratorSize <= 1):
		return fmt.Errorf("config: generator_size %g must be in (0, 1] (a share of the discriminator's width; the paper's is 0.25 to 0.5)", c.GeneratorSize)
	}
	m := c.Model
	m.VocabSize = max(m.VocabSize, m.PadTokenID+1)
	_, err := c.generatorConfig(m, false) // whether it shares the embeddings is known once the tokenizer is
	return err
}

// GeneratorConfig is the generator's config for the discriminator config
// disc: the Generator config (its vocab_size disc's when it gives none),
// else disc's shape at GeneratorSize of its width. It must share disc's
// embeddings (bert.CheckElectraShared).
func (c ElectraConfig) GeneratorConfig(disc bert.Config) (bert.Config, error) {
	return c.generatorConfig(disc, true)
}

// generatorConfig is GeneratorConfig, checking that the generator shares
// disc's embeddings when shared is set.
func (c ElectraConfig) generatorConfig(disc bert.Config, shared bool) (bert.Config, error) {
	if len(c.Generator) == 0 {
		g := disc
		g.HiddenSize = max(1, int(math.Round(float64(disc.HiddenSize)*c.GeneratorSize)))
		g.IntermediateSize = 4 * g.HiddenSize
		g.NumAttentionHeads = max(1, g.HiddenSize/64)
		g.ID2Label = nil
		return g, g.Validate()
	}
	raw, what := []byte(c.Generator), "the generator config"
	var path string
	if err := json.Unmarshal(c.Generator, &path); err == nil {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			path = filepath.Join(path, models.ConfigFile)
		}
		if raw, err = os.ReadFile(path); err != nil {
			return bert.Config{}, fmt.Errorf("config: generator: %w", err)
		}
		what = path
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil {
		return bert.Config{}, fmt.Errorf("config: generator: %s: %w", what, err)
	}
	g := bert.Config{ModelType: bert.ElectraModelType}
	if err := json.Unmarshal(raw, &g); err != nil {
		return bert.Config{}, fmt.Errorf("config: generator: %s: %w", what, err)
	}
	if g.ModelType != bert.ElectraModelType {
		return bert.Config{}, fmt.Errorf("config: generator: %s has model type %q, not %q", what, cmp.Or(g.ModelType, bert.ModelType), bert.ElectraModelType)
	}
	if _, ok := given["vocab_size"]; !ok {
		g.VocabSize = disc.VocabSize
	}
	if _, ok := given["pad_token_id"]; !ok {
		g.PadTokenID = disc.PadTokenID
	}
	g.ID2Label = nil
	if err := g.Validate(); err != nil {
		return bert.Config{}, fmt.Errorf("config: generator: %s: %w", what, err)
	}
	if !shared {
		return g, nil
	}
	if err := bert.CheckElectraShared(disc, g); err != nil {
		return bert.Config{}, fmt.Errorf("config: generator: %s: %w", what, err)
	}
	return g, nil
}

// ElectraResult is what an ELECTRA pretraining run produced: the
// engine's result and the last held-out evaluation (ElectraScores).
type ElectraResult struct {
	train.Result
	ElectraScores
	Pairs, ValPairs int
}

// RunElectra pretrains an ELECTRA as cfg says, writing checkpoints — the
// discriminator as an ElectraForPreTraining folder with tokenizer.json
// (what fine-tuning starts from: zoo finetune bert --init-from), the
// generator as an ElectraForMaskedLM folder beside it (generator/) —
// vocab.txt, metrics.jsonl (with the generator's and the discriminator's
// losses and accuracies, and the held-out replaced-token detection
// accuracy and AUC) and loss.png under cfg.OutputDir. It is train.Run with
// ElectraRecipe.
func RunElectra(ctx context.Context, cfg ElectraConfig, out io.Writer) (*ElectraResult, error) {
	r, err := NewElectraRecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.cfg.Args, r, out)
	if err != nil {
		return nil, err
	}
	return &ElectraResult{Result: res, ElectraScores: r.final, Pairs: r.bert.trainPairs.Len(), ValPairs: r.bert.valPairs.Len()}, nil
}

// ElectraRecipe is ELECTRA pretraining as a train.Recipe: BERT's corpus,
// WordPiece and sentence pairs with dynamic masking (BERTRecipe's), an
// ElectraPair and its task. Use it with train.Run, or RunElectra.
type ElectraRecipe struct {
	cfg   ElectraConfig
	bert  *BERTRecipe // the data: corpus, tokenizer, pairs
	pair  *bert.ElectraPair
	gen   bert.Config
	data  *ElectraData
	final ElectraScores
}

// NewElectraRecipe checks cfg, opens its corpus and checks that it is
// text, and that init_from, if given, is a checkpoint of zoo pretrain
// electra (the discriminator, with its generator/ beside it).
func NewElectraRecipe(ctx context.Context, cfg ElectraConfig) (*ElectraRecipe, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.InitFrom != "" {
		if err := checkElectraCheckpoint(cfg.InitFrom); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		}
	}
	corpus, err := openTextCorpus(ctx, cfg.Corpus, cfg.InitFrom, "bert")
	if err != nil {
		return nil, err
	}
	return &ElectraRecipe{cfg: cfg, bert: &BERTRecipe{cfg: cfg.BERTConfig, corpus: corpus}}, nil
}

// ElectraGeneratorDir is the generator's folder in a checkpoint of zoo
// pretrain electra.
const ElectraGeneratorDir = "generator"

// checkElectraCheckpoint refuses a dir that is not an ELECTRA
// discriminator with its generator beside it.
func checkElectraCheckpoint(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, ElectraGeneratorDir, models.ConfigFile)); err != nil {
		if _, err := os.Stat(filepath.Join(dir, models.ConfigFile)); err == nil {
			return fmt.Errorf("%s has no %s/%s: not an ELECTRA pretraining checkpoint (zoo pretrain electra's: the discriminator, its generator in %s/)", dir, ElectraGeneratorDir, models.ConfigFile, ElectraGeneratorDir)
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, ElectraGeneratorDir)} {
		var c bert.Config
		if err := models.ReadConfig(d, "bert", &c); err != nil {
			return err
		}
		if c.ModelType != bert.ElectraModelType {
			return fmt.Errorf("%s is a %q checkpoint, not an ELECTRA pretraining checkpoint (zoo pretrain electra's: the discriminator, its generator in %s/)", d, c.ModelType, ElectraGeneratorDir)
		}
	}
	return nil
}

// Record is what run.json records: BERT's (corpus, tokenizer, data and
// the discriminator's config), the generator's settings and λ.
func (r *ElectraRecipe) Record(ctx context.Context) (train.Record, error) {
	rec, err := bertRecord(ctx, r.cfg.BERTConfig, r.bert.corpus)
	if err != nil {
		return nil, err
	}
	if err := rec.Set("disc_weight", r.cfg.DiscWeight); err != nil {
		return nil, err
	}
	if len(r.cfg.Generator) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, r.cfg.Generator); err != nil {
			return nil, fmt.Errorf("pretrain: generator: %w", err)
		}
		err = rec.Set("generator", b.String())
	} else {
		err = rec.Set("generator_size", r.cfg.GeneratorSize)
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// Setup chooses the WordPiece and makes the pairs as BERT's recipe does
// (on a resume or with init_from, the checkpoint's tokenizer, and its
// discriminator and generator), and returns the step's activation memory:
// the discriminator's and the generator's.
func (r *ElectraRecipe) Setup(ctx context.Context, resume string, out io.Writer) (train.MemoryNeed, error) {
	cfg := &r.cfg
	br := r.bert
	from, what := resume, "resume"
	if from == "" {
		from, what = cfg.InitFrom, "init_from"
	}
	var err error
	if from != "" {
		if br.tok, r.pair, err = loadElectra(from); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: %s: %w", what, err)
		}
		if what == "init_from" {
			fmt.Fprint(out, notUsed(cfg.Model, r.pair.DiscriminatorConfig(), DefaultElectra().Model, cfg.ModelJSON, "vocab_size", "pad_token_id"))
		}
		cfg.Model, r.gen = r.pair.DiscriminatorConfig(), r.pair.GeneratorConfig()
		br.cfg.Model = cfg.Model
	} else {
		switch {
		case cfg.Tokenizer == "wordpiece":
			began := time.Now()
			if br.tok, err = datasets.TrainWordPiece(ctx, br.corpus, datasets.WordPieceOptions{VocabSize: cfg.VocabSize, Lowercase: cfg.Lowercase, StripAccents: cfg.Lowercase}); err != nil {
				return train.MemoryNeed{}, fmt.Errorf("pretrain: wordpiece: %w", err)
			}
			fmt.Fprintf(out, "wordpiece: %d tokens trained on the corpus in %s\n", br.tok.VocabSize(), time.Since(began).Round(time.Millisecond))
		default:
			if br.tok, err = readWordPiece(cfg.Tokenizer, cfg.Lowercase); err != nil {
				return train.MemoryNeed{}, err
			}
		}
	}
	if br.sp, err = BERTSpecialsOf(br.tok); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: %w", err)
	}
	if r.pair == nil { // the generator's config, once the vocabulary is known and before the corpus is read
		cfg.Model.VocabSize, cfg.Model.PadTokenID = br.tok.VocabSize(), br.sp.PAD
		if r.gen, err = cfg.GeneratorConfig(cfg.Model); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: %w", err)
		}
	} else if cfg.Model.VocabSize != br.tok.VocabSize() {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: the checkpoint's tokenizer has %d tokens and its model %d (vocab_size): they must match", br.tok.VocabSize(), cfg.Model.VocabSize)
	}
	if err := br.pairs(ctx, out); err != nil {
		return train.MemoryNeed{}, err
	}
	bytes := cfg.Model.ActivationBytes(cfg.BatchSize, cfg.MaxSeqLength, true) + r.gen.ActivationBytes(cfg.BatchSize, cfg.MaxSeqLength, true)
	return train.MemoryNeed{Bytes: bytes,
		What:  fmt.Sprintf("pretrain: batch_size %d × max_seq_length %d for the discriminator's and the generator's activations", cfg.BatchSize, cfg.MaxSeqLength),
		Lower: "lower batch_size (use gradient_accumulation_steps to keep the sequences per step) or max_seq_length"}, nil
}

// Build makes the pair (unless Setup loaded one), the task and its
// batches, and writes the WordPiece's vocab.txt in the run directory.
func (r *ElectraRecipe) Build(context.Context) (train.Plan, error) {
	cfg := r.cfg
	br := r.bert
	var err error
	if r.pair == nil {
		if r.pair, err = bert.NewElectraPair(cfg.Model, r.gen, layers.WithSeed(cfg.Seed)); err != nil {
			return train.Plan{}, err
		}
	}
	pairCfg := cfg.BERTPairConfig
	inner, err := NewBERTPreTrainingData(br.trainPairs, br.valPairs, br.sp, pairCfg, cfg.BatchSize, cfg.EvalBatches, cfg.Seed)
	if err != nil {
		return train.Plan{}, fmt.Errorf("pretrain: %w", err)
	}
	r.data = &ElectraData{BERTPreTrainingData: inner}
	if err := br.tok.SaveVocab(filepath.Join(cfg.OutputDir, "vocab.txt")); err != nil {
		return train.Plan{}, fmt.Errorf("pretrain: %w", err)
	}
	task := &ElectraTask{Pair: r.pair, Tok: br.tok, B: cfg.BatchSize, T: cfg.MaxSeqLength, P: cfg.BatchSize * cfg.MaxPredictions, Lambda: cfg.DiscWeight}
	d, g := r.pair.DiscriminatorConfig(), r.pair.GeneratorConfig()
	return train.Plan{
		Task: task, Data: r.data, DefaultSchedule: "linear",
		Scores: func(ctx context.Context) (map[string]float64, error) {
			batches, err := r.data.Eval()
			if err != nil {
				return nil, err
			}
			s, err := EvaluateElectra(ctx, task, batches)
			if err != nil {
				return nil, err
			}
			r.final = s
			return s.Map(), nil
		},
		Summary: fmt.Sprintf("electra: %d parameters (embeddings shared); discriminator %d layers, %d heads, %d wide, embeddings %d; generator %d layers, %d heads, %d wide; λ %g; batch %d × %d tokens, %d masked each",
			r.pair.NumParams(), d.NumHiddenLayers, d.NumAttentionHeads, d.HiddenSize, d.EmbeddingSize, g.NumHiddenLayers, g.NumAttentionHeads, g.HiddenSize,
			cfg.DiscWeight, cfg.BatchSize, cfg.MaxSeqLength, cfg.MaxPredictions),
	}, nil
}

// Finish does nothing: the last evaluation's scores are the result's.
func (r *ElectraRecipe) Finish(context.Context, *train.Trainer, train.Result, io.Writer) error {
	return nil
}

// loadElectra reads a checkpoint of zoo pretrain electra: its WordPiece,
// and the discriminator with its generator (in generator/) as a pair.
func loadElectra(dir string) (*datasets.WordPiece, *bert.ElectraPair, error) {
	if err := checkElectraCheckpoint(dir); err != nil {
		return nil, nil, err
	}
	t, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, nil, err
	}
	tok, ok := t.(*datasets.WordPiece)
	if !ok {
		return nil, nil, fmt.Errorf("%s: the tokenizer is a %T, not a WordPiece: ELECTRA pretraining needs BERT's tokenizer", dir, t)
	}
	p, err := bert.LoadElectraPair(dir, filepath.Join(dir, ElectraGeneratorDir))
	if err != nil {
		return nil, nil, err
	}
	return tok, p, nil
}

// ElectraEval is a zoo pretrain electra checkpoint's figures on a corpus:
// the objective's loss and parts, and the held-out scores.
type ElectraEval struct {
	ElectraScores
	Loss, MLMLoss, RTDLoss float64
	Pairs                  int
}

// EvalElectra scores a zoo pretrain electra checkpoint (the
// discriminator, its generator in generator/) on a corpus (one sentence
// per line, blank lines between documents), with λ the discriminator
// loss's weight: pairs and masks are made as pretraining makes
// validation pairs (seeded, static masks), with the data settings of cfg,
// at most maxPairs of them (0: all), and the generator's samples drawn at
// uniforms from seed.
func EvalElectra(ctx context.Context, checkpoint, corpus string, cfg BERTPairConfig, lambda float64, batch, maxPairs int, seed uint64) (ElectraEval, error) {
	var e ElectraEval
	if err := cfg.Validate(); err != nil {
		return e, err
	}
	if batch <= 0 || maxPairs < 0 || !(lambda > 0) {
		return e, fmt.Errorf("eval: batch size %d and λ %g must be positive and the pair limit %d not negative", batch, lambda, maxPairs)
	}
	tok, p, err := loadElectra(checkpoint)
	if err != nil {
		return e, err
	}
	d := p.DiscriminatorConfig()
	if d.VocabSize != tok.VocabSize() {
		return e, fmt.Errorf("eval: %s: the tokenizer has %d tokens and the model %d (vocab_size): they must match", checkpoint, tok.VocabSize(), d.VocabSize)
	}
	if cfg.MaxSeqLength > d.MaxPositionEmbeddings {
		return e, fmt.Errorf("eval: max_seq_length %d exceeds the checkpoint's max_position_embeddings %d", cfg.MaxSeqLength, d.MaxPositionEmbeddings)
	}
	sp, err := BERTSpecialsOf(tok)
	if err != nil {
		return e, err
	}
	bb, n, err := evalBatches(ctx, corpus, tok, sp, cfg, MakeBERTPairs, batch, maxPairs, seed)
	if err != nil {
		return e, err
	}
	batches := electraEvalBatches(bb, seed)
	task := &ElectraTask{Pair: p, Tok: tok, B: batch, T: cfg.MaxSeqLength, P: batch * cfg.MaxPredictions, Lambda: lambda}
	loss, _, parts, err := train.EvaluateReports(ctx, task, batches)
	if err != nil {
		return e, err
	}
	if e.ElectraScores, err = EvaluateElectra(ctx, task, batches); err != nil {
		return e, err
	}
	e.Loss, e.MLMLoss, e.RTDLoss, e.Pairs = loss, parts["mlm_loss"], parts["rtd_loss"], n
	return e, nil
}
