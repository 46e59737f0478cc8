package vit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ViTMAEForPreTraining is the masked autoencoder of He et al. (2022),
// transformers' ViTMAEForPreTraining (models/vit_mae/modeling_vit_mae.py)
// with its tensor names:
//
//   - the encoder, ViTMAEModel under "vit.": the patch projection
//     (vit.embeddings.patch_embeddings.projection), the class token
//     (vit.embeddings.cls_token), fixed 2-D sine-cosine positions
//     (vit.embeddings.position_embeddings (1, N+1, D), a buffer: transformers
//     creates it with requires_grad=False), the ViT blocks
//     (vit.encoder.layer.i.…, named as ViT's) and vit.layernorm. It reads
//     only the patches the random masking keeps, with the class token;
//   - the decoder under "decoder.": decoder_embed (D → Dd), mask_token
//     (1, 1, Dd), decoder_pos_embed (1, N+1, Dd, fixed, a buffer),
//     decoder_layers.i.… (ViT blocks Dd wide), decoder_norm and decoder_pred
//     (Dd → patch_size²·num_channels), which predicts every patch's pixels.
//
// The buffers are saved and loaded with the weights but are not among the
// learnable parameters, so the optimizer never sees them.
//
// Like Model, it is safe for concurrent use by multiple goroutines for
// inference (Reconstruct, MAEGraphs of their own); what writes the
// parameters (LoadWeights, training) must not overlap with it.
type ViTMAEForPreTraining struct {
	Config             ViTMAEConfig
	Store              *layers.Store
	PatchEmbeddings    *layers.PatchEmbedding
	ClassToken         *layers.ClassToken
	PositionEmbeddings *layers.Param // buffer (1, N+1, D)
	Encoder            *layers.Encoder
	DecoderEmbed       *layers.Linear
	MaskToken          *layers.Param // (1, 1, Dd)
	DecoderPosEmbed    *layers.Param // buffer (1, N+1, Dd)
	Decoder            *layers.Encoder
	DecoderPred        *layers.Linear
}

// decoderNames are ViTMAEDecoder's names, relative to the "decoder" scope.
var decoderNames = func() layers.BlockNames {
	n := blockNames
	n.Layers, n.StackNorm = "decoder_layers", "decoder_norm"
	return n
}()

// NewViTMAEForPreTraining builds the model with transformers'
// initialisation (ViTMAEPreTrainedModel._init_weights, and
// ViTMAEEmbeddings.initialize_weights and ViTMAEDecoder.initialize_weights):
// Linear weights N(0, initializer_range²) and biases 0, LayerNorms 1 and
// 0, the patch projection's weight xavier_uniform_ on its (D, C·P²) view,
// the class and mask tokens N(0, initializer_range²), and the two position
// tables get_2d_sincos_pos_embed with a zero class row. Options are New's
// store options (StoreOption: dtype, seed).
func NewViTMAEForPreTraining(cfg ViTMAEConfig, opts ...Option) (*ViTMAEForPreTraining, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := collect(opts)
	s, err := layers.NewStore(append([]layers.Option{layers.WithInitStd(cfg.InitializerRange)}, o.store...)...)
	if err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	if err := models.CheckParams("vit_mae", cfg.paramTerms(), int64(s.Dtype().Size())); err != nil {
		return nil, err
	}
	m := &ViTMAEForPreTraining{Config: cfg, Store: s}
	enc, dec := cfg.Encoder(), cfg.decoder()
	n, d, dd := cfg.NumPatches(), cfg.HiddenSize, cfg.DecoderHiddenSize
	grid := cfg.ImageSize / cfg.PatchSize
	table := func(dim int) layers.Init {
		return func(_ *rand.Rand, _ []int, v []float64) {
			t, _ := layers.SinCos2DTable(dim, grid, true) // dim is checked by Validate
			copy(v, t)
		}
	}
	root := s.Root().Sub("vit")
	emb := root.Sub("embeddings")
	if m.ClassToken, err = layers.NewClassToken(emb, d); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	if m.PositionEmbeddings, err = emb.Buffer("position_embeddings", []int{1, n + 1, d}, table(d)); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	if m.PatchEmbeddings, err = layers.NewPatchEmbedding(emb.Sub("patch_embeddings").Sub("projection"), cfg.NumChannels, cfg.PatchSize, d); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	if m.Encoder, err = layers.NewEncoder(root, enc.block(), cfg.NumHiddenLayers); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	ds := s.Root().Sub("decoder")
	if m.DecoderEmbed, err = layers.NewLinear(ds.Sub("decoder_embed"), d, dd, true); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	if m.MaskToken, err = ds.Param("mask_token", []int{1, 1, dd}, layers.Constant(0)); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	if m.DecoderPosEmbed, err = ds.Buffer("decoder_pos_embed", []int{1, n + 1, dd}, table(dd)); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	bc := dec.block()
	bc.Names = decoderNames
	if m.Decoder, err = layers.NewEncoder(ds, bc, cfg.DecoderNumHiddenLayers); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	if m.DecoderPred, err = layers.NewLinear(ds.Sub("decoder_pred"), dd, cfg.PatchValues(), true); err != nil {
		return nil, fmt.Errorf("vit_mae: %w", err)
	}
	m.init()
	return m, nil
}

// init draws the weights as transformers' ViTMAE does (see
// NewViTMAEForPreTraining): normal_(std) for matrices and tokens,
// xavier_uniform_ for the patch projection, zero biases.
func (m *ViTMAEForPreTraining) init() {
	std := m.Config.InitializerRange
	normal := layers.Constant(0)
	if std > 0 {
		normal = layers.Normal(std)
	}
	proj := m.PatchEmbeddings.Weight
	for _, p := range m.Store.Params() {
		switch {
		case p == proj:
			sh := p.Value.Shape()
			fanOut, fanIn := sh[0], sh.TotalSize()/sh[0]
			m.Store.Reinit(p, layers.Uniform(math.Sqrt(6/float64(fanIn+fanOut)))) // torch.nn.init.xavier_uniform_
		case p.Value.Dims() >= 2:
			m.Store.Reinit(p, normal)
		case strings.HasSuffix(p.Name, ".bias"):
			m.Store.Reinit(p, layers.Constant(0))
		}
	}
}

// NumParams is the number of learnable scalars (the position tables are
// buffers, not counted).
func (m *ViTMAEForPreTraining) NumParams() int { return m.Store.NumParams() }

// Decay reports whether a parameter gets weight decay, as MAE's
// main_pretrain.py groups them (timm's optim_factory.add_weight_decay with
// no skip list): every parameter of two or more dims, the class and mask
// tokens included; never biases and LayerNorms.
func (m *ViTMAEForPreTraining) Decay(name string, shape []int) bool { return len(shape) >= 2 }

// Masking is random_masking's result for a batch of B images of N patches:
// IDsShuffle (B, N) sorts each image's noise ascending (torch.argsort),
// IDsRestore (B, N) is its inverse permutation, the first Keep patches of
// IDsShuffle are the ones the encoder sees, and Mask (B, N) is 0 for a
// kept patch and 1 for a removed one, in the original patch order.
type Masking struct {
	B, N, Keep int
	IDsShuffle []int
	IDsRestore []int
	Mask       []float64
}

// RandomMasking is transformers' ViTMAEEmbeddings.random_masking on given
// noise (B, N), in [0, 1): ids_shuffle = argsort(noise, dim=1) (ties, which
// uniform noise practically never has, go to the lower index),
// ids_restore = argsort(ids_shuffle), keep the first keep, mask 1 for the
// rest.
func RandomMasking(noise []float64, b, n, keep int) (Masking, error) {
	if b <= 0 || n <= 0 || keep < 1 || keep > n || len(noise) != b*n {
		return Masking{}, fmt.Errorf("vit_mae: random masking: %d noise values for (%d, %d) patches keeping %d: want B·N values and 1 ≤ keep ≤ N", len(noise), b, n, keep)
	}
	mk := Masking{B: b, N: n, Keep: keep, IDsShuffle: make([]int, b*n), IDsRestore: make([]int, b*n), Mask: make([]float64, b*n)}
	for i := 0; i < b; i++ {
		row := noise[i*n : (i+1)*n]
		sh := mk.IDsShuffle[i*n : (i+1)*n]
		for j := range sh {
			sh[j] = j
		}
		sort.SliceStable(sh, func(x, y int) bool { return row[sh[x]] < row[sh[y]] })
		for r, j := range sh {
			mk.IDsRestore[i*n+j] = r
			if r >= keep {
				mk.Mask[i*n+j] = 1
			}
		}
	}
	return mk, nil
}

// Noise draws random_masking's noise (B, N) uniform in [0, 1) from r, as
// torch.rand(B, N).
func Noise(r *rand.Rand, b, n int) []float64 {
	v := make([]float64, b*n)
	for i := range v {
		v[i] = r.Float64()
	}
	return v
}

// Patchify is transformers' ViTMAEForPreTraining.patchify on images
// (B, C, S, S): (B, N, P²·C), patches in row-major order and each patch's
// values in (row, column, channel) order (einsum "nchpwq->nhwpqc").
func (c ViTMAEConfig) Patchify(pixels []float32, b int) ([]float64, error) {
	p, ch, s := c.PatchSize, c.NumChannels, c.ImageSize
	if len(pixels) != b*ch*s*s {
		return nil, fmt.Errorf("vit_mae: patchify: %d pixel values do not fill (%d, %d, %d, %d)", len(pixels), b, ch, s, s)
	}
	g := s / p
	out := make([]float64, 0, len(pixels))
	for i := 0; i < b; i++ {
		for h := 0; h < g; h++ {
			for w := 0; w < g; w++ {
				for y := 0; y < p; y++ {
					for x := 0; x < p; x++ {
						for k := 0; k < ch; k++ {
							out = append(out, float64(pixels[((i*ch+k)*s+h*p+y)*s+w*p+x]))
						}
					}
				}
			}
		}
	}
	return out, nil
}

// Unpatchify is Patchify's inverse, transformers' unpatchify: (B, N, P²·C)
// to images (B, C, S, S).
func (c ViTMAEConfig) Unpatchify(patches []float64, b int) ([]float64, error) {
	p, ch, s := c.PatchSize, c.NumChannels, c.ImageSize
	if len(patches) != b*ch*s*s {
		return nil, fmt.Errorf("vit_mae: unpatchify: %d values do not fill (%d, %d, %d)", len(patches), b, c.NumPatches(), c.PatchValues())
	}
	g := s / p
	out := make([]float64, len(patches))
	q := 0
	for i := 0; i < b; i++ {
		for h := 0; h < g; h++ {
			for w := 0; w < g; w++ {
				for y := 0; y < p; y++ {
					for x := 0; x < p; x++ {
						for k := 0; k < ch; k++ {
							out[((i*ch+k)*s+h*p+y)*s+w*p+x] = patches[q]
							q++
						}
					}
				}
			}
		}
	}
	return out, nil
}

// NormPixTargets normalises each patch of targets (B·N rows of P values)
// in place by its mean and unbiased variance, (t − mean)/√(var + 1e-6), as
// forward_loss does with norm_pix_loss (torch's var is unbiased by
// default). It returns each row's mean and √(var + 1e-6).
func NormPixTargets(targets []float64, p int) (mean, std []float64) {
	rows := len(targets) / p
	mean, std = make([]float64, rows), make([]float64, rows)
	for r := 0; r < rows; r++ {
		row := targets[r*p : (r+1)*p]
		mu := 0.0
		for _, v := range row {
			mu += v
		}
		mu /= float64(p)
		ss := 0.0
		for _, v := range row {
			ss += (v - mu) * (v - mu)
		}
		vr := math.NaN() // torch's var of one value
		if p > 1 {
			vr = ss / float64(p-1)
		}
		sd := math.Sqrt(vr + 1e-6)
		for i := range row {
			row[i] = (row[i] - mu) / sd
		}
		mean[r], std[r] = mu, sd
	}
	return mean, std
}

// MAEGraph is ViTMAEForPreTraining's forward pass on a graph for batches
// of B images: set a batch's pixels and noise with Set, run the graph, then
// read Logits and Loss. Like its layers.Graph, it is not safe for
// concurrent use: Set writes the graph's inputs and the batch's fields.
type MAEGraph struct {
	// Pixels is the input (B, C, S, S).
	Pixels *gorgonia.Node
	// Logits (B, N, P²·C) are the decoder's predictions of every patch,
	// transformers' ViTMAEForPreTrainingOutput.logits.
	Logits *gorgonia.Node
	// Loss is the mean squared error over the values of the masked patches
	// (forward_loss: the mean over a patch's values, then over the masked
	// patches).
	Loss *gorgonia.Node
	// Masking is the masking of the batch last Set.
	Masking Masking
	// Targets (B·N, P²·C) are the patch targets of the batch last Set
	// (normalised with norm_pix_loss), and TargetMean and TargetStd each
	// patch's statistics when normalised (nil otherwise).
	Targets, TargetMean, TargetStd []float64

	m                     *ViTMAEForPreTraining
	b                     int
	keep, restore, masked *gorgonia.Node // int inputs
	target                *gorgonia.Node // (B·(N−K), P²·C)
	keepIDs, restoreIDs   []int
	maskedIDs             []int
	targetVals            []float64
}

// Graph builds the forward pass for batches of b images on g
// (ViTMAEForPreTraining.forward): the patches plus their positions; the
// kept ones gathered, the class token (plus its position, zero) put
// first; the encoder and vit.layernorm; decoder_embed; the mask token put
// in the removed patches' places and every token moved back to its patch
// (torch.gather with ids_restore); decoder_pos_embed added; the decoder
// layers, decoder_norm and decoder_pred; the class token's prediction
// dropped. Gathers are ops.Gather (scatter-add gradients).
func (m *ViTMAEForPreTraining) Graph(g *layers.Graph, b int) (*MAEGraph, error) {
	c := m.Config
	if b <= 0 {
		return nil, fmt.Errorf("vit_mae: batch size %d must be positive", b)
	}
	n, k, d, dd, pv := c.NumPatches(), c.LenKeep(), c.HiddenSize, c.DecoderHiddenSize, c.PatchValues()
	mg := &MAEGraph{m: m, b: b}
	mg.Pixels = g.Input("pixel_values", b, c.NumChannels, c.ImageSize, c.ImageSize)
	mg.keep = g.IntInput("vit_mae.ids_keep", b*(k+1))
	mg.restore = g.IntInput("vit_mae.ids_restore", b*(n+1))
	mg.masked = g.IntInput("vit_mae.masked_rows", b*(n-k))
	mg.target = g.Input("vit_mae.targets", b*(n-k), pv)
	wrap := func(what string, err error) error { return fmt.Errorf("vit_mae: %s: %w", what, err) }

	// Embeddings (ViTMAEEmbeddings.forward).
	x, err := m.PatchEmbeddings.Forward(g, mg.Pixels)
	if err != nil {
		return nil, wrap("patch embeddings", err)
	}
	pos, err := gorgonia.Reshape(g.Node(m.PositionEmbeddings), []int{n + 1, d})
	if err != nil {
		return nil, wrap("positions", err)
	}
	rest := make([]int, n)
	for i := range rest {
		rest[i] = i + 1
	}
	restIDs, err := g.IntConstant("vit_mae.patch_positions", rest, n)
	if err != nil {
		return nil, err
	}
	posPatches, err := ops.Gather(pos, restIDs)
	if err != nil {
		return nil, wrap("positions", err)
	}
	if x, err = ops.AddBroadcast(x, posPatches); err != nil {
		return nil, wrap("positions", err)
	}
	zero, err := g.IntConstant("vit_mae.cls_position", []int{0}, 1)
	if err != nil {
		return nil, err
	}
	posCls, err := ops.Gather(pos, zero)
	if err != nil {
		return nil, wrap("positions", err)
	}
	cls, err := gorgonia.Reshape(g.Node(m.ClassToken.Token), []int{1, d})
	if err != nil {
		return nil, wrap("class token", err)
	}
	if cls, err = gorgonia.Add(cls, posCls); err != nil {
		return nil, wrap("class token", err)
	}
	// (B, N, D) → (1, B·N, D) with the class token first: row 0 is the
	// class token, row 1 + b·N + j patch j of image b.
	if x, err = gorgonia.Reshape(x, []int{1, b * n, d}); err != nil {
		return nil, wrap("masking", err)
	}
	if x, err = ops.PrependToken(x, cls); err != nil {
		return nil, wrap("masking", err)
	}
	if x, err = gorgonia.Reshape(x, []int{b*n + 1, d}); err != nil {
		return nil, wrap("masking", err)
	}
	if x, err = ops.Gather(x, mg.keep); err != nil {
		return nil, wrap("masking", err)
	}
	if x, err = gorgonia.Reshape(x, []int{b, k + 1, d}); err != nil {
		return nil, wrap("masking", err)
	}
	// The encoder (ViTMAEEncoder) and vit.layernorm.
	if x, err = m.Encoder.Forward(g, x, nil); err != nil {
		return nil, wrap("encoder", err)
	}
	// The decoder (ViTMAEDecoder.forward).
	if x, err = m.DecoderEmbed.Forward(g, x); err != nil {
		return nil, wrap("decoder_embed", err)
	}
	if x, err = gorgonia.Reshape(x, []int{1, b * (k + 1), dd}); err != nil {
		return nil, wrap("unshuffle", err)
	}
	if x, err = ops.PrependToken(x, g.Node(m.MaskToken)); err != nil { // row 0: the mask token
		return nil, wrap("unshuffle", err)
	}
	if x, err = gorgonia.Reshape(x, []int{b*(k+1) + 1, dd}); err != nil {
		return nil, wrap("unshuffle", err)
	}
	if x, err = ops.Gather(x, mg.restore); err != nil {
		return nil, wrap("unshuffle", err)
	}
	if x, err = gorgonia.Reshape(x, []int{b, n + 1, dd}); err != nil {
		return nil, wrap("unshuffle", err)
	}
	dpos, err := gorgonia.Reshape(g.Node(m.DecoderPosEmbed), []int{n + 1, dd})
	if err != nil {
		return nil, wrap("decoder_pos_embed", err)
	}
	if x, err = ops.AddBroadcast(x, dpos); err != nil {
		return nil, wrap("decoder_pos_embed", err)
	}
	if x, err = m.Decoder.Forward(g, x, nil); err != nil {
		return nil, wrap("decoder", err)
	}
	if x, err = m.DecoderPred.Forward(g, x); err != nil {
		return nil, wrap("decoder_pred", err)
	}
	if x, err = gorgonia.Reshape(x, []int{b * (n + 1), pv}); err != nil {
		return nil, wrap("decoder_pred", err)
	}
	rows := make([]int, 0, b*n)
	for i := 0; i < b; i++ {
		for j := 0; j < n; j++ {
			rows = append(rows, i*(n+1)+1+j)
		}
	}
	rowIDs, err := g.IntConstant("vit_mae.patch_rows", rows, b*n)
	if err != nil {
		return nil, err
	}
	logits, err := ops.Gather(x, rowIDs)
	if err != nil {
		return nil, wrap("logits", err)
	}
	if mg.Logits, err = gorgonia.Reshape(logits, []int{b, n, pv}); err != nil {
		return nil, wrap("logits", err)
	}
	// forward_loss: the masked patches' squared errors, averaged. Every
	// image masks N−K patches, so the mean over the gathered values is
	// the mean per patch averaged over the masked patches.
	pred, err := ops.Gather(x, mg.masked)
	if err != nil {
		return nil, wrap("loss", err)
	}
	diff, err := gorgonia.Sub(pred, mg.target)
	if err != nil {
		return nil, wrap("loss", err)
	}
	sq, err := gorgonia.Square(diff)
	if err != nil {
		return nil, wrap("loss", err)
	}
	if mg.Loss, err = gorgonia.Mean(sq); err != nil {
		return nil, wrap("loss", err)
	}
	mg.keepIDs, mg.restoreIDs, mg.maskedIDs = make([]int, b*(k+1)), make([]int, b*(n+1)), make([]int, b*(n-k))
	mg.targetVals = make([]float64, b*(n-k)*pv)
	return mg, nil
}

// Set loads a batch: pixels (B, C, S, S) and random_masking's noise
// (B, N), from which it computes the masking, the gather indexes and the
// targets.
func (mg *MAEGraph) Set(pixels []float32, noise []float64) error {
	c := mg.m.Config
	b, n, k, pv := mg.b, c.NumPatches(), c.LenKeep(), c.PatchValues()
	if len(pixels) != b*c.NumChannels*c.ImageSize*c.ImageSize {
		return fmt.Errorf("vit_mae: %d pixel values do not fill the (%d, %d, %d, %d) batch", len(pixels), b, c.NumChannels, c.ImageSize, c.ImageSize)
	}
	mk, err := RandomMasking(noise, b, n, k)
	if err != nil {
		return err
	}
	tg, err := c.Patchify(pixels, b)
	if err != nil {
		return err
	}
	mg.TargetMean, mg.TargetStd = nil, nil
	if c.NormPixLoss {
		mg.TargetMean, mg.TargetStd = NormPixTargets(tg, pv)
	}
	mg.Masking, mg.Targets = mk, tg
	q, r := 0, 0
	for i := 0; i < b; i++ {
		mg.keepIDs[i*(k+1)] = 0 // the class token
		for j := 0; j < k; j++ {
			mg.keepIDs[i*(k+1)+1+j] = 1 + i*n + mk.IDsShuffle[i*n+j]
		}
		mg.restoreIDs[i*(n+1)] = 1 + i*(k+1) // the class token
		for j := 0; j < n; j++ {
			rk := mk.IDsRestore[i*n+j]
			if rk < k {
				mg.restoreIDs[i*(n+1)+1+j] = 1 + i*(k+1) + 1 + rk
			} else {
				mg.restoreIDs[i*(n+1)+1+j] = 0 // the mask token
				mg.maskedIDs[q] = i*(n+1) + 1 + j
				copy(mg.targetVals[r:r+pv], tg[(i*n+j)*pv:])
				q, r = q+1, r+pv
			}
		}
	}
	copyFloats(mg.Pixels, pixels)
	copy(mg.keep.Value().Data().([]int), mg.keepIDs)
	copy(mg.restore.Value().Data().([]int), mg.restoreIDs)
	copy(mg.masked.Value().Data().([]int), mg.maskedIDs)
	return layers.SetFloats(mg.target, mg.targetVals)
}
