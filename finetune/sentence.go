package finetune

// Sentence-embedding fine-tuning (issue 38): sentence-transformers'
// MultipleNegativesRankingLoss on (anchor, positive) pairs, a recipe on
// train.Run (`zoo finetune bert --task embeddings`).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// SentencePairsConfig is the configuration of sentence-embedding
// fine-tuning with in-batch negatives.
type SentencePairsConfig struct {
	// Checkpoint is a BERT-family checkpoint (its encoder; heads are
	// dropped) or a sentence-transformers folder (its pooling and
	// normalisation are kept; Pooling and Normalize are then ignored).
	Checkpoint string `json:"init_from"`
	// TrainFile holds (anchor, positive) pairs: TSV, two tab-separated
	// texts a line, or JSONL, {"anchor": ..., "positive": ...} a line.
	TrainFile   string  `json:"train_file"`
	ValFile     string  `json:"validation_file"` // optional; without it val_fraction of train_file validates
	ValFraction float64 `json:"val_fraction"`
	MaxLength   int     `json:"max_length"` // tokens kept per text, special tokens included; 0: the most the model reads
	// Pooling of a plain checkpoint: "mean" (sentence-transformers'
	// default), "cls" or "mean_sqrt_len".
	Pooling   string `json:"pooling"`
	Normalize bool   `json:"normalize"` // a plain checkpoint's model gets a Normalize module
	// Scale multiplies the cosine similarities before the cross-entropy
	// (MultipleNegativesRankingLoss's scale, 20).
	Scale float64 `json:"scale"`
	train.Args
}

// DefaultSentencePairs is a small run: batch 16 pairs, 300 steps at 5e-5
// with 30 warmup steps and linear decay, scale 20, mean pooling, a 10%
// validation split. The run directory, when left empty, is
// runs/bert-embeddings.
func DefaultSentencePairs() SentencePairsConfig {
	return SentencePairsConfig{ValFraction: 0.1, Pooling: "mean", Scale: 20, Args: train.Args{BatchSize: 16, MaxSteps: 300, LearningRate: 5e-5, WarmupSteps: 30, WeightDecay: 0.01,
		AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, LRSchedulerType: "linear", MaxGradNorm: 1, EvalSteps: 100, Seed: 1}}
}

// ReadSentencePairsConfig reads a JSON config file over base; unknown
// keys and wrong types are errors.
func ReadSentencePairsConfig(path string, base SentencePairsConfig) (SentencePairsConfig, error) {
	return train.ReadConfig(path, base, func(c *SentencePairsConfig) *train.Args { return &c.Args }, "", nil)
}

// SentencePairsResult is what a run produced: the retrieval accuracy on
// the validation pairs with the final weights.
type SentencePairsResult struct {
	train.Result
	// Retrieval is with the final weights, Before with the checkpoint's
	// (zero for a resumed run).
	Retrieval, Before Retrieval
}

// Retrieval scores embeddings on pairs: each anchor searches all the
// positives by cosine similarity; RecallAt1 and RecallAt10 are the
// fractions that find their own positive first, or in the first 10.
type Retrieval struct {
	Pairs                 int
	RecallAt1, RecallAt10 float64
}

// RunSentencePairs fine-tunes a sentence-embedding model on (anchor,
// positive) pairs with MultipleNegativesRankingLoss: each batch's B
// anchors score the B positives by Scale × cosine similarity and the
// loss is the cross-entropy against each anchor's own positive (the
// others are its negatives). Checkpoints are sentence-transformers
// folders. It is train.Run with SentencePairsRecipe.
func RunSentencePairs(ctx context.Context, cfg SentencePairsConfig, out io.Writer) (*SentencePairsResult, error) {
	r, err := NewSentencePairsRecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.Args(), r, out)
	if err != nil {
		return nil, err
	}
	return &SentencePairsResult{Result: res, Retrieval: r.Retrieval, Before: r.Before}, nil
}

// SentencePairsRecipe is sentence-embedding fine-tuning as a
// train.Recipe. A recipe serves one train.Run at a time.
type SentencePairsRecipe struct {
	cfg          SentencePairsConfig
	trainP, valP [][2]string
	st           *bert.SentenceEmbeddings
	maxLen       int
	resume       string // the checkpoint a resumed run continues, "" for a new run
	task         *pairTask
	data         *pairData
	valIDs       [2][][]int
	out          io.Writer
	// Retrieval is on the validation pairs with the final weights, set
	// by Finish; Before with the checkpoint's, set by Build (a new run's).
	Retrieval, Before Retrieval
}

// NewSentencePairsRecipe checks cfg and reads the pairs, splitting off
// val_fraction when there is no validation file. An empty output_dir is
// runs/bert-embeddings.
func NewSentencePairsRecipe(_ context.Context, cfg SentencePairsConfig) (*SentencePairsRecipe, error) {
	switch {
	case cfg.Checkpoint == "" || cfg.TrainFile == "":
		return nil, fmt.Errorf("finetune: init_from (a checkpoint) and train_file are required")
	case cfg.BatchSize < 2:
		return nil, fmt.Errorf("finetune: batch_size %d: in-batch negatives need at least 2 pairs a batch (each anchor's negatives are the other pairs' positives)", cfg.BatchSize)
	case !(cfg.ValFraction > 0 && cfg.ValFraction < 1) && cfg.ValFile == "":
		return nil, fmt.Errorf("finetune: val_fraction %g must be in (0, 1)", cfg.ValFraction)
	case cfg.Scale <= 0:
		return nil, fmt.Errorf("finetune: scale %g must be positive (sentence-transformers' default is 20)", cfg.Scale)
	}
	if _, err := poolingOf(cfg.Pooling, 1); err != nil {
		return nil, err
	}
	if cfg.OutputDir == "" {
		cfg.OutputDir = filepath.Join("runs", "bert-embeddings")
	}
	if err := cfg.Args.Validate(); err != nil {
		return nil, err
	}
	r := &SentencePairsRecipe{cfg: cfg}
	var err error
	if r.trainP, err = ReadPairs(cfg.TrainFile); err != nil {
		return nil, err
	}
	if cfg.ValFile != "" {
		if r.valP, err = ReadPairs(cfg.ValFile); err != nil {
			return nil, err
		}
	} else {
		p := slices.Clone(r.trainP)
		rand.New(rand.NewPCG(cfg.Seed, 17)).Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		n := max(1, int(float64(len(p))*cfg.ValFraction))
		r.trainP, r.valP = p[:len(p)-n], p[len(p)-n:]
	}
	if len(r.trainP) < cfg.BatchSize {
		return nil, fmt.Errorf("finetune: %d training pairs, fewer than batch_size %d: in-batch negatives need a full batch of distinct pairs", len(r.trainP), cfg.BatchSize)
	}
	if len(r.valP) < cfg.BatchSize {
		return nil, fmt.Errorf("finetune: %d validation pairs, fewer than batch_size %d: the validation loss runs in full batches; give more (val_fraction, validation_file) or lower batch_size", len(r.valP), cfg.BatchSize)
	}
	return r, nil
}

// poolingOf is the Pooling named by name, of width d.
func poolingOf(name string, d int) (bert.Pooling, error) {
	p := bert.Pooling{WordEmbeddingDimension: d, IncludePrompt: true}
	switch name {
	case "", "mean":
		p.MeanTokens = true
	case "cls":
		p.CLSToken = true
	case "mean_sqrt_len":
		p.MeanSqrtLenTokens = true
	default:
		return p, fmt.Errorf("finetune: pooling %q: training pools by mean, cls or mean_sqrt_len", name)
	}
	return p, nil
}

// ReadPairs reads (anchor, positive) pairs: a .jsonl file of
// {"anchor", "positive"} objects, else two tab-separated texts a line.
// Blank lines are skipped; an empty text is an error naming its line.
func ReadPairs(path string) ([][2]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("finetune: pairs: %w", err)
	}
	defer f.Close()
	jsonl := strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".json")
	var out [][2]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		var p [2]string
		if jsonl {
			var x struct {
				Anchor   *string `json:"anchor"`
				Positive *string `json:"positive"`
			}
			if err := json.Unmarshal([]byte(line), &x); err != nil || x.Anchor == nil || x.Positive == nil {
				return nil, fmt.Errorf("finetune: %s:%d: want {\"anchor\": text, \"positive\": text}", path, n)
			}
			p = [2]string{*x.Anchor, *x.Positive}
		} else {
			cols := strings.Split(line, "\t")
			if len(cols) != 2 {
				return nil, fmt.Errorf("finetune: %s:%d: %d tab-separated columns; want 2 (anchor, positive)", path, n, len(cols))
			}
			p = [2]string{cols[0], cols[1]}
		}
		if strings.TrimSpace(p[0]) == "" || strings.TrimSpace(p[1]) == "" {
			return nil, fmt.Errorf("finetune: %s:%d: an empty text", path, n)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("finetune: %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("finetune: %s has no pairs", path)
	}
	return out, nil
}

// Args are the arguments to give train.Run with the recipe.
func (r *SentencePairsRecipe) Args() train.Args { return r.cfg.Args }

// Record is what run.json records: the whole configuration but the
// settings a resume may change.
func (r *SentencePairsRecipe) Record(context.Context) (train.Record, error) { return record(r.cfg) }

// Setup loads the model: a sentence-transformers folder as it is, a
// plain checkpoint's encoder with the configured pooling.
func (r *SentencePairsRecipe) Setup(_ context.Context, resume string, out io.Writer) (train.MemoryNeed, error) {
	r.out, r.resume = out, resume
	dir := r.cfg.Checkpoint
	var err error
	if bert.IsSentenceTransformers(dir) {
		r.st, err = bert.LoadSentenceEmbeddings(dir)
	} else {
		var m *bert.Model
		if m, _, err = bert.Load(dir); err == nil {
			var p bert.Pooling
			if p, err = poolingOf(r.cfg.Pooling, m.Config.HiddenSize); err == nil {
				r.st, err = bert.NewSentenceEmbeddings(m, dir, p, r.cfg.Normalize)
			}
		}
	}
	if err != nil {
		return train.MemoryNeed{}, fmt.Errorf("finetune: %w", err)
	}
	if _, ok := r.st.Pooling.PoolWeights(1, 1); !ok {
		return train.MemoryNeed{}, fmt.Errorf("finetune: %s pools by max or by several modes; training pools by one of mean, cls, mean_sqrt_len", dir)
	}
	most := r.st.Model.Config.MaxTokens()
	if r.st.MaxSeqLength > 0 {
		most = min(most, r.st.MaxSeqLength)
	}
	if r.maxLen, err = classifyMaxLen(r.cfg.MaxLength, most); err != nil {
		return train.MemoryNeed{}, err
	}
	r.st.MaxSeqLength = r.maxLen
	return train.MemoryNeed{Bytes: 2 * r.st.Model.Config.ActivationBytes(r.cfg.BatchSize, r.maxLen, true),
		What: fmt.Sprintf("finetune: 2 × batch_size %d × max_length %d for activations", r.cfg.BatchSize, r.maxLen), Lower: "lower batch_size or max_length"}, nil
}

// encodePairs encodes both sides of pairs, specials included, truncated
// to maxLen; it returns the longest encoding.
func (r *SentencePairsRecipe) encodePairs(pairs [][2]string) (ids [2][][]int, longest int, err error) {
	for side := range 2 {
		ids[side] = make([][]int, len(pairs))
		for i, p := range pairs {
			text := p[side]
			if r.st.DoLowerCase {
				text = strings.ToLower(text)
			}
			x, _, err := r.st.Tokenizer.EncodeWithSpecials(text)
			if err != nil {
				return ids, 0, fmt.Errorf("pair %d: %w", i+1, err)
			}
			if len(x) > r.maxLen {
				x = append(x[:r.maxLen-1:r.maxLen-1], x[len(x)-1])
			}
			ids[side][i] = x
			longest = max(longest, len(x))
		}
	}
	return ids, longest, nil
}

// Build encodes the pairs and makes the task and its batches; the batch
// length is the longest text's, within max_length.
func (r *SentencePairsRecipe) Build(context.Context) (train.Plan, error) {
	tr, n1, err := r.encodePairs(r.trainP)
	if err != nil {
		return train.Plan{}, fmt.Errorf("finetune: %s: %w", r.cfg.TrainFile, err)
	}
	va, n2, err := r.encodePairs(r.valP)
	if err != nil {
		return train.Plan{}, fmt.Errorf("finetune: validation: %w", err)
	}
	r.valIDs = va
	t := max(n1, n2)
	b := r.cfg.BatchSize
	r.data = &pairData{train: tr, pcg: rand.NewPCG(r.cfg.Seed, 29), b: b, t: t, pad: r.st.Model.Config.PadTokenID, pool: r.st.Pooling}
	for lo := 0; lo+b <= len(va[0]); lo += b {
		r.data.val = append(r.data.val, r.data.batch([2][][]int{va[0][lo : lo+b], va[1][lo : lo+b]}))
	}
	r.task = &pairTask{st: r.st, b: b, t: t, scale: r.cfg.Scale}
	if r.resume == "" { // the baseline: the checkpoint's embeddings before training
		ret, err := r.retrieval()
		if err != nil {
			return train.Plan{}, err
		}
		r.Before = ret
		fmt.Fprintf(r.out, "validation retrieval before training over %d pairs: recall@1 %.4f, recall@10 %.4f\n", ret.Pairs, ret.RecallAt1, ret.RecallAt10)
	}
	plan := train.Plan{Task: r.task, Data: r.data, DefaultSchedule: "linear", Unit: "pair",
		Scores: func(context.Context) (map[string]float64, error) {
			ret, err := r.retrieval()
			if err != nil {
				return nil, err
			}
			return map[string]float64{"recall@1": ret.RecallAt1, "recall@10": ret.RecallAt10}, nil
		},
		Summary: fmt.Sprintf("sentence embeddings (%s): %d training and %d validation pairs, batch %d pairs, %d tokens a text, scale %g; the weights of %s",
			poolName(r.st), len(tr[0]), len(va[0]), b, t, r.cfg.Scale, r.cfg.Checkpoint)}
	return plan, nil
}

func poolName(s *bert.SentenceEmbeddings) string {
	p := s.Pooling
	name := "mean pooling"
	switch {
	case p.CLSToken:
		name = "[CLS] pooling"
	case p.MeanSqrtLenTokens:
		name = "mean·√n pooling"
	}
	if s.Normalize {
		name += ", normalised"
	}
	return name
}

// retrieval scores the validation pairs with the model's weights now.
func (r *SentencePairsRecipe) retrieval() (Retrieval, error) {
	a, err := r.st.EmbedIDs(r.valIDs[0])
	if err != nil {
		return Retrieval{}, fmt.Errorf("finetune: retrieval: %w", err)
	}
	p, err := r.st.EmbedIDs(r.valIDs[1])
	if err != nil {
		return Retrieval{}, fmt.Errorf("finetune: retrieval: %w", err)
	}
	return ScoreRetrieval(a, p), nil
}

// ScoreRetrieval ranks, for each anchor a[i], all positives p by cosine
// similarity and scores where p[i] comes (ties count against it).
func ScoreRetrieval(a, p [][]float32) Retrieval {
	unit := func(x [][]float32) [][]float64 {
		out := make([][]float64, len(x))
		for i, v := range x {
			out[i] = make([]float64, len(v))
			n := 0.0
			for _, f := range v {
				n += float64(f) * float64(f)
			}
			n = max(1e-12, math.Sqrt(n))
			for k, f := range v {
				out[i][k] = float64(f) / n
			}
		}
		return out
	}
	ua, up := unit(a), unit(p)
	var at1, at10 int
	for i, x := range ua {
		dot := func(y []float64) float64 {
			s := 0.0
			for k := range x {
				s += x[k] * y[k]
			}
			return s
		}
		own, rank := dot(up[i]), 0
		for j, y := range up {
			if j != i && dot(y) >= own {
				rank++
			}
		}
		if rank < 1 {
			at1++
		}
		if rank < 10 {
			at10++
		}
	}
	n := float64(len(a))
	return Retrieval{Pairs: len(a), RecallAt1: float64(at1) / n, RecallAt10: float64(at10) / n}
}

// Finish scores retrieval on the validation pairs.
func (r *SentencePairsRecipe) Finish(_ context.Context, _ *train.Trainer, _ train.Result, out io.Writer) error {
	var err error
	if r.Retrieval, err = r.retrieval(); err != nil {
		return err
	}
	fmt.Fprintf(out, "validation retrieval over %d pairs: recall@1 %.4f, recall@10 %.4f\n", r.Retrieval.Pairs, r.Retrieval.RecallAt1, r.Retrieval.RecallAt10)
	return nil
}

// pairSide is one side (anchors or positives) of a batch: B texts padded
// to T, their mask and pooling weights.
type pairSide struct {
	ids        []int     // (B, T)
	mask, pool []float64 // (B, T)
}

// pairBatch is B (anchor, positive) pairs.
type pairBatch struct {
	side [2]pairSide
	b    int
}

func (b pairBatch) Targets() int { return b.b }

// pairData draws training batches of distinct pairs at random (seeded,
// resumable) and serves the full validation batches in order.
type pairData struct {
	train     [2][][]int
	val       []train.Batch
	pcg       *rand.PCG
	b, t, pad int
	pool      bert.Pooling
}

func (d *pairData) batch(ex [2][][]int) pairBatch {
	out := pairBatch{b: len(ex[0])}
	for s := range 2 {
		x := pairSide{ids: make([]int, d.b*d.t), mask: make([]float64, d.b*d.t), pool: make([]float64, 0, d.b*d.t)}
		for i := range x.ids {
			x.ids[i] = d.pad
		}
		for i, ids := range ex[s] {
			copy(x.ids[i*d.t:], ids)
			for j := range ids {
				x.mask[i*d.t+j] = 1
			}
			w, _ := d.pool.PoolWeights(len(ids), d.t)
			x.pool = append(x.pool, w...)
		}
		out.side[s] = x
	}
	return out
}

func (d *pairData) Next() (train.Batch, error) {
	r := rand.New(d.pcg)
	seen := map[int]bool{}
	var ex [2][][]int
	for len(seen) < d.b {
		i := r.IntN(len(d.train[0]))
		if seen[i] {
			continue
		}
		seen[i] = true
		ex[0], ex[1] = append(ex[0], d.train[0][i]), append(ex[1], d.train[1][i])
	}
	return d.batch(ex), nil
}

func (d *pairData) Eval() ([]train.Batch, error) { return d.val, nil }
func (d *pairData) State() ([]byte, error)       { return d.pcg.MarshalBinary() }
func (d *pairData) Restore(s []byte) error       { return d.pcg.UnmarshalBinary(s) }

// pairTask is MultipleNegativesRankingLoss for the training engine.
type pairTask struct {
	st    *bert.SentenceEmbeddings
	b, t  int
	scale float64
}

func (k *pairTask) Store() *layers.Store { return k.st.Model.Store }

// Decay is BERT's no-decay rule (biases and LayerNorms).
func (k *pairTask) Decay(name string, shape []int) bool { return k.st.Model.Decay(name, shape) }

type pairInputs struct {
	in     [2]bert.Inputs
	pool   [2]*gorgonia.Node
	labels *gorgonia.Node
}

func (k *pairTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	var in pairInputs
	var emb [2]*gorgonia.Node
	for s, name := range []string{"anchor", "positive"} {
		in.in[s] = bert.Inputs{IDs: g.IntInput(name+"_input_ids", k.b, k.t), Mask: g.Input(name+"_attention_mask", k.b, k.t)}
		in.pool[s] = g.Input(name+"_pool_weights", k.b, k.t)
		var err error
		if emb[s], err = k.st.Forward(g, in.in[s], in.pool[s]); err != nil {
			return nil, nil, err
		}
	}
	labels := make([]int, k.b)
	for i := range labels {
		labels[i] = i
	}
	var err error
	if in.labels, err = g.IntConstant("labels", labels, k.b); err != nil {
		return nil, nil, err
	}
	loss, err := MultipleNegativesRankingLoss(g, emb[0], emb[1], in.labels, k.scale)
	return loss, in.load, err
}

// MultipleNegativesRankingLoss is sentence-transformers' loss of the
// name: the cross-entropy of scale × cos_sim(anchors, positives) (B, B)
// against labels (B), each anchor's own positive (0…B−1 for pairs).
// anchors and positives are (B, D).
func MultipleNegativesRankingLoss(g *layers.Graph, anchors, positives, labels *gorgonia.Node, scale float64) (*gorgonia.Node, error) {
	b, d := anchors.Shape()[0], anchors.Shape()[1]
	if b < 2 {
		return nil, fmt.Errorf("finetune: a contrastive batch of %d pairs; in-batch negatives need at least 2", b)
	}
	var u [2]*gorgonia.Node
	for i, x := range []*gorgonia.Node{anchors, positives} {
		n, err := bert.L2Normalize(g, x)
		if err != nil {
			return nil, err
		}
		if u[i], err = gorgonia.Reshape(n, []int{1, b, d}); err != nil {
			return nil, fmt.Errorf("finetune: %w", err)
		}
	}
	sim, err := ops.BatchedMatMul(u[0], u[1], false, true) // (1, B, D)·(1, B, D)ᵀ = (1, B, B)
	if err != nil {
		return nil, fmt.Errorf("finetune: similarities: %w", err)
	}
	if sim, err = gorgonia.Reshape(sim, []int{b, b}); err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	if sim, err = ops.Scale(sim, scale); err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	return layers.CrossEntropy(sim, labels, layers.IgnoreIndex, 0)
}

func (in pairInputs) load(b train.Batch) error {
	pb, ok := b.(pairBatch)
	if !ok {
		return fmt.Errorf("finetune: batch of %T", b)
	}
	for s := range 2 {
		copy(in.in[s].IDs.Value().Data().([]int), pb.side[s].ids)
		if err := layers.SetFloats(in.in[s].Mask, pb.side[s].mask); err != nil {
			return err
		}
		if err := layers.SetFloats(in.pool[s], pb.side[s].pool); err != nil {
			return err
		}
	}
	return nil
}

// Save writes a sentence-transformers folder.
func (k *pairTask) Save(dir string) error { return k.st.Save(dir) }

// Load reads a checkpoint's weights back into the model.
func (k *pairTask) Load(dir string) error {
	return k.st.Model.LoadWeights(filepath.Join(dir, layers.WeightsFile))
}
