package bert

import (
	"fmt"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ElectraPair is ELECTRA's pretraining model (Clark et al. 2020,
// google-research/electra): a small generator (a masked LM) and the
// discriminator (ElectraForPreTraining) in one store, sharing one set of
// embeddings — word, position and token-type tables and their LayerNorm,
// at the shared embedding_size — which the gradients of both losses
// train. The discriminator's parameters have its checkpoint names
// (electra.*, discriminator_predictions.*); the generator's own, its
// checkpoint names under "generator." (generator.electra.encoder.*, its
// embeddings_project when its hidden_size is not embedding_size,
// generator.generator_predictions.*, generator.generator_lm_head.bias).
//
// Split copies the two out as standalone models, to save as transformers'
// ElectraForPreTraining and ElectraForMaskedLM; Set copies two such models
// in (a resume). An ElectraPair is not safe for concurrent use while it
// trains; its graphs are the store's (see Model).
type ElectraPair struct {
	Store         *layers.Store
	disc          *ElectraForPreTraining
	gen           *ForMaskedLM
	discCfg, gCfg Config
}

// generatorScope is the prefix of the generator's own parameters in an
// ElectraPair's store.
const generatorScope = "generator"

// NewElectraPair builds the pair for the discriminator config disc and
// the generator config gen, both ELECTRA configs (ModelType
// ElectraModelType). They share the embeddings, so their vocab_size,
// embedding_size, max_position_embeddings and type_vocab_size must agree;
// an error names both shapes.
func NewElectraPair(disc, gen Config, opts ...layers.Option) (*ElectraPair, error) {
	if gen.ModelType != ElectraModelType {
		return nil, fmt.Errorf("bert: the ELECTRA generator's config has model type %q, not %q", gen.ModelType, ElectraModelType)
	}
	if err := gen.Validate(); err != nil {
		return nil, fmt.Errorf("bert: the ELECTRA generator: %w", err)
	}
	if err := CheckElectraShared(disc, gen); err != nil {
		return nil, err
	}
	d, err := NewElectraForPreTraining(disc, opts...)
	if err != nil {
		return nil, err
	}
	s := d.Store
	root := s.Root().Sub(generatorScope)
	gm := &Model{Config: gen, Store: s, WordEmbeddings: d.WordEmbeddings, PositionEmbeddings: d.PositionEmbeddings,
		TokenTypeEmbeddings: d.TokenTypeEmbeddings, EmbeddingsNorm: d.EmbeddingsNorm, drop: layers.Dropout{P: gen.HiddenDropoutProb}, arch: archMaskedLM}
	if gm.EmbeddingsProject, err = newEmbeddingsProject(root.Sub("electra"), gen); err != nil {
		return nil, fmt.Errorf("bert: generator: %w", err)
	}
	if gm.Encoder, err = layers.NewEncoder(root.Sub("electra").Sub("encoder"), gen.block(), gen.NumHiddenLayers); err != nil {
		return nil, fmt.Errorf("bert: generator: %w", err)
	}
	h, err := newMLMHeadAt(gm, root)
	if err != nil {
		return nil, fmt.Errorf("bert: generator: %w", err)
	}
	return &ElectraPair{Store: s, disc: d, gen: &ForMaskedLM{Model: gm, MLM: h}, discCfg: d.Config, gCfg: gen}, nil
}

// CheckElectraShared reports a generator config gen whose embeddings do
// not fit the discriminator config disc's, which it shares: vocab_size ×
// embedding_size (the word table), max_position_embeddings and
// type_vocab_size.
func CheckElectraShared(disc, gen Config) error {
	if disc.VocabSize != gen.VocabSize || disc.embeddingSize() != gen.embeddingSize() {
		return fmt.Errorf("bert: the ELECTRA generator's embedding table (vocab_size %d × embedding_size %d) does not match the discriminator's (%d × %d): the two share it; give the generator the discriminator's vocab_size and embedding_size",
			gen.VocabSize, gen.embeddingSize(), disc.VocabSize, disc.embeddingSize())
	}
	if disc.MaxPositionEmbeddings != gen.MaxPositionEmbeddings || disc.TypeVocabSize != gen.TypeVocabSize {
		return fmt.Errorf("bert: the ELECTRA generator's position and token-type tables (max_position_embeddings %d, type_vocab_size %d) do not match the discriminator's (%d, %d): the two share them",
			gen.MaxPositionEmbeddings, gen.TypeVocabSize, disc.MaxPositionEmbeddings, disc.TypeVocabSize)
	}
	return nil
}

// DiscriminatorConfig is the pair's discriminator config.
func (p *ElectraPair) DiscriminatorConfig() Config { return p.discCfg }

// GeneratorConfig is the pair's generator config.
func (p *ElectraPair) GeneratorConfig() Config { return p.gCfg }

// Decay reports whether a parameter gets weight decay (Model.Decay: not
// the shared embedding tables, biases or LayerNorms).
func (p *ElectraPair) Decay(name string, shape []int) bool { return p.disc.Decay(name, shape) }

// NumParams is the number of learnable scalars of the pair, the shared
// embeddings counted once.
func (p *ElectraPair) NumParams() int { return p.Store.NumParams() }

// ElectraLoss are the outputs of ElectraPair.Loss.
type ElectraLoss struct {
	// Loss = MLMLoss + λ·RTDLoss, scalars.
	Loss, MLMLoss, RTDLoss *gorgonia.Node
	MLMLogits              *gorgonia.Node // (P, V): the generator's scores at the masked positions
	Samples                *gorgonia.Node // (P) int: the tokens drawn from them
	RTDLogits              *gorgonia.Node // (B, T): the discriminator's replaced-token scores
	RTDLabels              *gorgonia.Node // (B, T) int: 1 replaced, 0 original, layers.IgnoreIndex at padding
}

// Loss builds ELECTRA's objective on a batch: the generator reads in
// (IDs with the masked positions masked, (B, T)) and scores the P masked
// positions (flat b·T + t) against labels (P) int, the original tokens
// (layers.IgnoreIndex for unused slots): MLMLoss. At each used slot a
// token is drawn from the generator's softmax by inverse CDF at the
// uniform u (P, float in [0, 1)), with no gradient through the draw; the
// discriminator reads in.IDs with the drawn tokens at the masked
// positions, and rtdBase (B, T) int — 0 at tokens, layers.IgnoreIndex at
// padding — becomes its labels: 1 where the drawn token differs from the
// original (a draw equal to it counts as original). RTDLoss is the
// binary cross-entropy over the non-padding tokens, and Loss = MLMLoss +
// lambda·RTDLoss. It reports mlm_loss, mlm_accuracy, rtd_loss and
// rtd_accuracy (layers.Graph.Report).
func (p *ElectraPair) Loss(g *layers.Graph, in Inputs, positions, labels, u, rtdBase *gorgonia.Node, lambda float64) (*ElectraLoss, error) {
	gh, err := p.gen.Hidden(g, in)
	if err != nil {
		return nil, fmt.Errorf("bert: generator: %w", err)
	}
	b, t, d := gh.Shape()[0], gh.Shape()[1], gh.Shape()[2]
	flat, err := gorgonia.Reshape(gh, []int{b * t, d})
	if err != nil {
		return nil, fmt.Errorf("bert: generator: %w", err)
	}
	picked, err := layers.GatherRows(flat, positions) // (P, D)
	if err != nil {
		return nil, fmt.Errorf("bert: generator: %w", err)
	}
	var out ElectraLoss
	if out.MLMLogits, err = p.gen.MLM.Forward(g, picked); err != nil {
		return nil, fmt.Errorf("bert: generator head: %w", err)
	}
	if out.MLMLoss, err = layers.CrossEntropy(out.MLMLogits, labels, layers.IgnoreIndex, 0); err != nil {
		return nil, fmt.Errorf("bert: generator loss: %w", err)
	}
	if out.Samples, err = ops.SampleSoftmax(out.MLMLogits, u); err != nil {
		return nil, fmt.Errorf("bert: generator: %w", err)
	}
	corrupted, err := ops.ReplaceAt(in.IDs, positions, labels, out.Samples, layers.IgnoreIndex, false)
	if err != nil {
		return nil, fmt.Errorf("bert: discriminator input: %w", err)
	}
	if out.RTDLabels, err = ops.ReplaceAt(rtdBase, positions, labels, out.Samples, layers.IgnoreIndex, true); err != nil {
		return nil, fmt.Errorf("bert: discriminator labels: %w", err)
	}
	if out.RTDLogits, err = p.disc.Forward(g, Inputs{IDs: corrupted, TokenTypes: in.TokenTypes, Mask: in.Mask}); err != nil {
		return nil, fmt.Errorf("bert: discriminator: %w", err)
	}
	two, err := twoClass(g, out.RTDLogits)
	if err != nil {
		return nil, err
	}
	if out.RTDLoss, err = layers.CrossEntropy(two, out.RTDLabels, layers.IgnoreIndex, 0); err != nil {
		return nil, fmt.Errorf("bert: discriminator loss: %w", err)
	}
	var l any = float32(lambda)
	if g.Dtype() != tensor.Float32 {
		l = lambda
	}
	weighted, err := gorgonia.Mul(out.RTDLoss, gorgonia.NewConstant(l))
	if err != nil {
		return nil, fmt.Errorf("bert: loss: %w", err)
	}
	if out.Loss, err = gorgonia.Add(out.MLMLoss, weighted); err != nil {
		return nil, fmt.Errorf("bert: loss: %w", err)
	}
	mlmAcc, err := layers.Accuracy(out.MLMLogits, labels, layers.IgnoreIndex)
	if err != nil {
		return nil, fmt.Errorf("bert: generator accuracy: %w", err)
	}
	rtdAcc, err := layers.Accuracy(two, out.RTDLabels, layers.IgnoreIndex)
	if err != nil {
		return nil, fmt.Errorf("bert: discriminator accuracy: %w", err)
	}
	for _, r := range []struct {
		name string
		n    *gorgonia.Node
	}{{"mlm_loss", out.MLMLoss}, {"mlm_accuracy", mlmAcc}, {"rtd_loss", out.RTDLoss}, {"rtd_accuracy", rtdAcc}} {
		if err := g.Report(r.name, r.n); err != nil {
			return nil, fmt.Errorf("bert: %w", err)
		}
	}
	return &out, nil
}

// Split copies the pair into two standalone models: the discriminator, an
// ElectraForPreTraining, and the generator, a ForMaskedLM (transformers'
// ElectraForMaskedLM), each with its own copy of the shared embeddings,
// to save, load or fine-tune apart.
func (p *ElectraPair) Split() (*ElectraForPreTraining, *ForMaskedLM, error) {
	d, err := NewElectraForPreTraining(p.discCfg, layers.WithDtype(p.Store.Dtype()))
	if err != nil {
		return nil, nil, err
	}
	g, err := NewForMaskedLM(p.gCfg, layers.WithDtype(p.Store.Dtype()))
	if err != nil {
		return nil, nil, err
	}
	for _, c := range []struct {
		s   *layers.Store
		gen bool
	}{{d.Store, false}, {g.Store, true}} {
		for _, dst := range c.s.Params() {
			src, ok := p.Store.Param(p.pairName(dst.Name, c.gen))
			if !ok {
				return nil, nil, fmt.Errorf("bert: electra pair: no %s in the pair for %s", p.pairName(dst.Name, c.gen), dst.Name)
			}
			if err := copyParam(dst, src); err != nil {
				return nil, nil, err
			}
		}
	}
	return d, g, nil
}

// Set copies a discriminator and a generator of the pair's configs into
// the pair (a resume from what Split saved); the shared embeddings are
// the discriminator's, and the generator's copy of them must equal them.
func (p *ElectraPair) Set(d *ElectraForPreTraining, g *ForMaskedLM) error {
	if d.Config.NumParams() != p.discCfg.NumParams() || g.Config.NumParams() != p.gCfg.NumParams() || g.Config.embeddingSize() != p.gCfg.embeddingSize() {
		return fmt.Errorf("bert: electra pair: the discriminator (%d parameters) or the generator (%d) does not have the pair's shapes (%d, %d)",
			d.Config.NumParams(), g.Config.NumParams(), p.discCfg.NumParams(), p.gCfg.NumParams())
	}
	for _, c := range []struct {
		s   *layers.Store
		gen bool
	}{{d.Store, false}, {g.Store, true}} {
		for _, src := range c.s.Params() {
			dst, ok := p.Store.Param(p.pairName(src.Name, c.gen))
			if !ok {
				return fmt.Errorf("bert: electra pair: %s has no place in the pair", src.Name)
			}
			if c.gen && dst.Name == src.Name { // shared: the discriminator's, already copied
				a, _ := layers.Float64s(src.Value)
				b, _ := layers.Float64s(dst.Value)
				if !slices.Equal(a, b) {
					return fmt.Errorf("bert: electra pair: the generator's %s differs from the discriminator's, which it shares: not a pair saved together", src.Name)
				}
				continue
			}
			if err := copyParam(dst, src); err != nil {
				return err
			}
		}
	}
	return nil
}

// pairName is the pair's parameter for a standalone model's parameter
// name: the same for the discriminator's and the generator's embeddings,
// the generator's others under "generator.".
func (p *ElectraPair) pairName(name string, gen bool) string {
	if !gen || strings.HasPrefix(name, electraVariant.prefix+".embeddings.") {
		return name
	}
	return generatorScope + "." + name
}

// copyParam copies src's values into dst, of one shape and dtype.
func copyParam(dst, src *layers.Param) error {
	if !dst.Value.Shape().Eq(src.Value.Shape()) || dst.Value.Dtype() != src.Value.Dtype() {
		return fmt.Errorf("bert: electra pair: %s is %v %v, and %s %v %v", dst.Name, dst.Value.Shape(), dst.Value.Dtype(), src.Name, src.Value.Shape(), src.Value.Dtype())
	}
	switch v := dst.Value.Data().(type) {
	case []float32:
		copy(v, src.Value.Data().([]float32))
	case []float64:
		copy(v, src.Value.Data().([]float64))
	default:
		return fmt.Errorf("bert: electra pair: %s holds %T", dst.Name, v)
	}
	return nil
}

// LoadElectraPair reads what Split saved — the discriminator's checkpoint
// in discDir and the generator's in genDir — strictly, into a new pair.
func LoadElectraPair(discDir, genDir string, opts ...layers.Option) (*ElectraPair, error) {
	d, g, err := loadElectraParts(discDir, genDir, opts)
	if err != nil {
		return nil, err
	}
	p, err := NewElectraPair(d.Config, g.Config, opts...)
	if err != nil {
		return nil, err
	}
	if err := p.Set(d, g); err != nil {
		return nil, err
	}
	return p, nil
}

// Load reads what Split saved — the discriminator's checkpoint in discDir
// and the generator's in genDir — strictly into p (Set).
func (p *ElectraPair) Load(discDir, genDir string) error {
	d, g, err := loadElectraParts(discDir, genDir, []layers.Option{layers.WithDtype(p.Store.Dtype())})
	if err != nil {
		return err
	}
	return p.Set(d, g)
}

// loadElectraParts reads a discriminator and a generator strictly.
func loadElectraParts(discDir, genDir string, opts []layers.Option) (*ElectraForPreTraining, *ForMaskedLM, error) {
	lo := storeOptions(opts, models.Strict())
	d, _, err := LoadElectraForPreTraining(discDir, lo...)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: electra discriminator: %w", err)
	}
	g, _, err := LoadForMaskedLM(genDir, lo...)
	if err != nil {
		return nil, nil, fmt.Errorf("bert: electra generator: %w", err)
	}
	return d, g, nil
}

// under is the scope of a dotted path below sc.
func under(sc layers.Scope, dotted string) layers.Scope {
	for _, p := range strings.Split(dotted, ".") {
		sc = sc.Sub(p)
	}
	return sc
}

// twoClass is the (B, T, 2) scores (0, x) of the binary logits x (B, T),
// whose two-class softmax cross-entropy is the binary one.
func twoClass(g *layers.Graph, logits *gorgonia.Node) (*gorgonia.Node, error) {
	b, t := logits.Shape()[0], logits.Shape()[1]
	x, err := gorgonia.Reshape(logits, []int{b, t, 1})
	if err != nil {
		return nil, fmt.Errorf("bert: binary scores: %w", err)
	}
	zero, err := g.Constant("binary_zero", make([]float64, b*t), b, t, 1)
	if err != nil {
		return nil, fmt.Errorf("bert: binary scores: %w", err)
	}
	if x, err = gorgonia.Concat(2, zero, x); err != nil {
		return nil, fmt.Errorf("bert: binary scores: %w", err)
	}
	return x, nil
}
