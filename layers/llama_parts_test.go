package layers

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/ops"
)

// RMSNorm matches LlamaRMSNorm (PyTorch golden, float64) in value and in
// the gradients of x and weight, and in float32 HF's float32 computation
// to float32 rounding.
func TestGoldenRMSNorm(t *testing.T) {
	gd := loadGolden(t, "rmsnorm")
	s := newStore64(t)
	x := gd.dense("in.x")
	n, err := NewRMSNorm(s.Root(), x.Shape()[x.Dims()-1], 1e-6)
	require.NoError(t, err)
	gd.loadParams(s)
	gr := s.NewGraph()
	xn := gd.constant(gr, "in.x")
	y, err := n.Forward(gr, xn)
	require.NoError(t, err)
	gd.check(s, gr, map[string]*gorgonia.Node{"in.x": xn}, y, 1e-12)

	s32, err := NewStore()
	require.NoError(t, err)
	n32, err := NewRMSNorm(s32.Root(), x.Shape()[x.Dims()-1], 1e-6)
	require.NoError(t, err)
	for i, v := range gd.dense("weight").Data().([]float64) {
		n32.Weight.Value.Data().([]float32)[i] = float32(v)
	}
	g32 := s32.NewGraph()
	y32, err := n32.Forward(g32, g32.Bind("x", asFloat32(x)))
	require.NoError(t, err)
	got := runRead(t, g32, y32)[0].(*tensor.Dense).Data().([]float32)
	for i, w := range gd.dense("out.y32").Data().([]float64) {
		require.InDelta(t, w, float64(got[i]), 1e-6*(1+math.Abs(w)), "float32 element %d", i)
	}

	_, err = NewRMSNorm(s.Root().Sub("bad"), 4, 0)
	require.ErrorContains(t, err, "eps > 0")
}

func asFloat32(x *tensor.Dense) *tensor.Dense {
	v := x.Data().([]float64)
	f := make([]float32, len(v))
	for i, e := range v {
		f[i] = float32(e)
	}
	return tensor.New(tensor.WithShape(x.Shape().Clone()...), tensor.WithBacking(f))
}

// SwiGLU matches LlamaMLP (PyTorch golden, float64) with and without
// mlp_bias, under LlamaMLP's parameter names, in value and gradients.
func TestGoldenSwiGLU(t *testing.T) {
	for _, name := range []string{"swiglu", "swiglu_bias"} {
		t.Run(name, func(t *testing.T) {
			gd := loadGolden(t, name)
			s := newStore64(t)
			f, err := NewSwiGLU(s.Root(), SwiGLUConfig{Dim: gd.metaInt("hidden_size"), Hidden: gd.metaInt("intermediate_size"),
				Bias: gd.meta("mlp_bias") == "True"})
			require.NoError(t, err)
			gd.loadParams(s)
			gr := s.NewGraph()
			xn := gd.constant(gr, "in.x")
			y, err := f.Forward(gr, xn)
			require.NoError(t, err)
			gd.check(s, gr, map[string]*gorgonia.Node{"in.x": xn}, y, 1e-12)
		})
	}
	s := newStore64(t)
	_, err := NewSwiGLU(s.Root(), SwiGLUConfig{Dim: 4})
	require.ErrorContains(t, err, "inner width 0 must be positive")
}

// llamaTiny builds golden_layers.py's LLAMA_TINY from layers alone: token
// embeddings, pre-norm causal blocks with RMSNorms, rotary grouped-query
// attention without biases, SwiGLU feed-forwards, a final RMSNorm and an
// untied LM head, under Hugging Face's LlamaForCausalLM names.
func llamaTiny(t *testing.T) (*CausalLM, *golden) {
	t.Helper()
	gd := loadGolden(t, "llama_tiny")
	s := newStore64(t)
	const vocab, d, heads, kvh, hd, inter, nl, eps, theta = 24, 16, 4, 2, 4, 24, 2, 1e-6, 10000.0
	wte, err := NewEmbedding(s.Root().Sub("model.embed_tokens"), vocab, d)
	require.NoError(t, err)
	rot, err := NewRotary(hd, theta)
	require.NoError(t, err)
	cfg := BlockConfig{Dim: d, Heads: heads, KVHeads: kvh, HeadDim: hd, FFNDim: inter, Activation: "silu", Norm: PreNorm,
		Causal: true, Positions: rot, NewNorm: RMSNorms(eps), NewMLP: SwiGLUs("mlp", false),
		Names: BlockNames{SelfAttn: "self_attn", SelfAttnNorm: "input_layernorm", FinalNorm: "post_attention_layernorm",
			Attention: AttentionNames{Query: "q_proj", Key: "k_proj", Value: "v_proj", Out: "o_proj"},
			Layers:    "layers", StackNorm: "norm"}}
	stack, err := NewEncoder(s.Root().Sub("model"), cfg, nl)
	require.NoError(t, err)
	head, err := NewLinear(s.Root().Sub("lm_head"), d, vocab, false)
	require.NoError(t, err)
	gd.loadParams(s) // strict: every name must be Hugging Face's
	return &CausalLM{
		Name:  "llama tiny",
		Store: s,
		Embed: func(g *Graph, ids, _ *gorgonia.Node) (*gorgonia.Node, error) { return wte.Forward(g, ids) },
		Stack: stack, Head: head.Forward, Context: 16,
	}, gd
}

// A LLaMA-shaped decoder composed of the layers (RMSNorm, rotary, SwiGLU,
// GQA, no biases) gives PyTorch's LlamaForCausalLM logits (float64, 1e-10)
// on a left-padded batch with position ids from the attention mask; greedy
// decoding through the KV cache picks PyTorch's tokens, and every cached
// step's logits equal the full recompute's (1e-10). (Seen to fail with
// SwiGLU's silu on up instead of gate, and with RMSNorm's eps dropped.)
func TestLlamaShapedDecoder(t *testing.T) {
	lm, gd := llamaTiny(t)
	ids, am := gd.dense("in.input_ids").Data().([]float64), gd.dense("in.attention_mask").Data().([]float64)
	want := gd.dense("out.logits").Data().([]float64)
	const b, tl, v = 2, 6, 24

	// One left-padded batch: positions count from each row's first token.
	g := lm.Store.NewGraph()
	idv, pos := make([]int, b*tl), make([]int, b*tl)
	for r := range b {
		p := 0
		for j := range tl {
			idv[r*tl+j] = int(ids[r*tl+j])
			if am[r*tl+j] != 0 {
				pos[r*tl+j] = p
				p++
			}
		}
	}
	idn, err := g.IntConstant("ids", idv, b, tl)
	require.NoError(t, err)
	pn, err := g.IntConstant("positions", pos, b, tl)
	require.NoError(t, err)
	mask, err := g.Constant("mask", am, b, tl)
	require.NoError(t, err)
	h, err := lm.Embed(g, idn, pn)
	require.NoError(t, err)
	h, err = lm.Stack.ForwardAt(g, h, mask, pn)
	require.NoError(t, err)
	logits, err := lm.Head(g, h)
	require.NoError(t, err)
	got := runRead(t, g, logits)[0].(*tensor.Dense).Data().([]float64)
	for i := range want {
		if am[i/v] == 0 {
			continue // padding: not compared (zero in the golden)
		}
		require.InDelta(t, want[i], got[i], 1e-10, "logit %d", i)
	}

	// Greedy generation, cached and recomputed.
	seqs := make([][]int, b)
	for r := range b {
		for j := range tl {
			if am[r*tl+j] != 0 {
				seqs[r] = append(seqs[r], idv[r*tl+j])
			}
		}
	}
	gen := gd.dense("out.generated")
	cached, err := lm.NewStepper(CausalOptions{MaxNewTokens: gen.Shape()[1]})
	require.NoError(t, err)
	defer cached.Close()
	full, err := lm.NewStepper(CausalOptions{MaxNewTokens: gen.Shape()[1], NoCache: true})
	require.NoError(t, err)
	defer full.Close()
	for step := range gen.Shape()[1] {
		w, err := full.Step(seqs)
		require.NoError(t, err)
		w = clone2(w)
		c, err := cached.Step(seqs)
		require.NoError(t, err)
		for r := range seqs {
			require.InDeltaSlice(t, w[r], c[r], 1e-10, "step %d row %d", step, r)
			if step == 0 {
				require.InDeltaSlice(t, want[(r*tl+tl-1)*v:(r*tl+tl)*v], c[r], 1e-10, "row %d's last prompt logits", r)
			}
			next := 0
			for k, x := range c[r] {
				if x > c[r][next] {
					next = k
				}
			}
			require.Equal(t, int(gen.Data().([]float64)[r*gen.Shape()[1]+step]), next, "step %d row %d: PyTorch's greedy token", step, r)
			seqs[r] = append(seqs[r], next)
		}
	}
}

// The KV cache of a grouped-query attention holds its kvh key-value heads
// only: kvh/h of a multi-head cache's bytes. A cached decoding step reads
// them in place: its graph holds no repeated copy of the cache, so its
// intermediates take 2·B·(h−kvh)·C·d_head values less than the same step
// through repeated heads (what it did before), with bit-identical output.
func TestGroupedQueryCacheMemory(t *testing.T) {
	const b, d, h, kvh, hd, capacity = 2, 32, 8, 2, 4, 256
	s := newStore64(t)
	gqa, err := NewMultiHeadAttention(s.Root().Sub("gqa"), AttentionConfig{Dim: d, Heads: h, KVHeads: kvh, HeadDim: hd})
	require.NoError(t, err)
	mha, err := NewMultiHeadAttention(s.Root().Sub("mha"), AttentionConfig{Dim: d, Heads: h, HeadDim: hd})
	require.NoError(t, err)
	gc := NewKVCaches([]*MultiHeadAttention{gqa}, b, capacity, tensor.Float64)
	mc := NewKVCaches([]*MultiHeadAttention{mha}, b, capacity, tensor.Float64)
	require.Equal(t, int64(2*b*kvh*capacity*hd*8), gc.Bytes())
	require.Equal(t, mc.Bytes()*kvh/h, gc.Bytes())
	t.Logf("KV cache: %d bytes with %d key-value heads, %d with %d heads", gc.Bytes(), kvh, mc.Bytes(), h)

	// Fill the first 5 slots with random keys and values.
	for _, c := range gc.Tensors {
		vals := c.Data().([]float64)
		for i := range vals {
			if (i/hd)%capacity < 5 {
				vals[i] = math.Sin(float64(i))
			}
		}
	}
	occupied := make([]float64, b*capacity)
	for r := range b {
		for j := range 6 {
			occupied[r*capacity+j] = 1
		}
	}
	step := func(repeat bool) ([]float64, int64) {
		g := s.NewGraph()
		x := randInput(g, "x", 9, b, 1, d)
		mask, err := g.Constant("occupied", occupied, b, capacity)
		require.NoError(t, err)
		slot, err := g.IntConstant("slot", []int{5}, 1)
		require.NoError(t, err)
		kv := gc.Bind(g, slot, nil)[0]
		var y *gorgonia.Node
		if !repeat {
			y, err = gqa.ForwardCached(g, x, mask, kv)
			require.NoError(t, err)
		} else { // ForwardCached as it was: the cache's heads repeated for the kernel
			y, err = forwardCachedRepeated(g, gqa, x, mask, kv)
			require.NoError(t, err)
		}
		var bytes int64
		for _, n := range g.AllNodes() {
			if n.Op() != nil {
				bytes += int64(n.Shape().TotalSize()) * 8
			}
		}
		return runRead(t, g, y)[0].(*tensor.Dense).Data().([]float64), bytes
	}
	before, bytesBefore := step(true)
	after, bytesAfter := step(false)
	require.Equal(t, before, after, "the same step, bit for bit")
	t.Logf("cached step's intermediates: %d bytes before, %d after", bytesBefore, bytesAfter)
	require.LessOrEqual(t, bytesAfter, bytesBefore-int64(2*b*(h-kvh)*capacity*hd*8))
}

// A LLaMA-shaped stack (RMSNorm, SwiGLU, rotary grouped-query attention)
// trains through a pooled Machine, its ops' kept buffers (RMSNorm's 1/rms,
// SwiGLU's σ(gate), the fused attention's log-sum-exp) planned in the
// pool: loss and every gradient equal, bit for bit and run after run, a
// plain tape machine's with buffers of its own.
func TestLlamaStackPooledTraining(t *testing.T) {
	s, err := NewStore(WithSeed(4))
	require.NoError(t, err)
	rot, err := NewRotary(4, 10000)
	require.NoError(t, err)
	c := BlockConfig{Dim: 16, Heads: 4, KVHeads: 2, HeadDim: 4, FFNDim: 24, Activation: "silu", Norm: PreNorm,
		Causal: true, Positions: rot, NewNorm: RMSNorms(1e-6), NewMLP: SwiGLUs("mlp", false)}
	enc, err := NewEncoder(s.Root().Sub("model"), c, 2)
	require.NoError(t, err)
	emb, err := NewEmbedding(s.Root().Sub("embed_tokens"), poolVocab, c.Dim)
	require.NoError(t, err)
	build := func() (*Graph, []*gorgonia.Value) {
		g := s.NewGraph(Training())
		ids, tg := make([]int, 2*5), make([]int, 2*5)
		for i := range ids {
			ids[i], tg[i] = (i*7+3)%poolVocab, (i*5+1)%poolVocab
		}
		idn, err := g.IntConstant("ids", ids, 2, 5)
		require.NoError(t, err)
		tgn, err := g.IntConstant("targets", tg, 2, 5)
		require.NoError(t, err)
		x, err := emb.Forward(g, idn)
		require.NoError(t, err)
		x, err = enc.Forward(g, x, nil)
		require.NoError(t, err)
		logits, err := emb.Logits(g, x)
		require.NoError(t, err)
		loss, err := CrossEntropy(logits, tgn, -100, 0)
		require.NoError(t, err)
		vals := []*gorgonia.Value{new(gorgonia.Value)}
		gorgonia.Read(loss, vals[0])
		grads, err := gorgonia.Grad(loss, g.Learnables()...)
		require.NoError(t, err)
		for _, gr := range grads {
			v := new(gorgonia.Value)
			gorgonia.Read(gr, v)
			vals = append(vals, v)
		}
		return g, vals
	}
	g, pv := build()
	pm, err := g.Machine(SharedOutputs())
	require.NoError(t, err)
	defer pm.Close()
	g2, qv := build()
	plain := gorgonia.NewTapeMachine(g2.ExprGraph)
	defer plain.Close()
	for round := range 2 {
		require.NoError(t, pm.RunAll())
		got := copies(t, pv)
		require.NoError(t, plain.RunAll())
		plain.Reset()
		require.Equal(t, copies(t, qv), got, "round %d", round)
	}
	require.Zero(t, s.Pool().Misses())
}

// forwardCachedRepeated is a single-token ForwardCached without a position
// encoder as it was before the fused kernel read grouped heads in place:
// the cache's kvh heads repeated to h for the kernel.
func forwardCachedRepeated(g *Graph, a *MultiHeadAttention, x, mask *gorgonia.Node, kv *KVCache) (*gorgonia.Node, error) {
	q, k, v, err := a.Project(g, x, x)
	if err != nil {
		return nil, err
	}
	if k, err = ops.WriteSlots(kv.K, k, kv.Slot); err != nil {
		return nil, err
	}
	if v, err = ops.WriteSlots(kv.V, v, kv.Slot); err != nil {
		return nil, err
	}
	if k, err = a.repeatKV(k); err != nil {
		return nil, err
	}
	if v, err = a.repeatKV(v); err != nil {
		return nil, err
	}
	ctx, err := ops.Attention(q, k, v, mask, a.scale(), NoCausal)
	if err != nil {
		return nil, err
	}
	merged, err := ops.MergeHeads(ctx, a.Heads)
	if err != nil {
		return nil, err
	}
	return a.Out.Forward(g, merged)
}

// BenchmarkGQADecodeStep times one grouped-query attention layer's cached
// decoding step in float32 at TinyLlama's attention shapes (width 2048, 32
// query heads, 4 key-value heads of 64), batch 1, over a cache of capacity
// 1024 with 512 slots occupied: the kernel reading the kvh heads in place,
// and the same step with the heads repeated first (the path before).
func BenchmarkGQADecodeStep(b *testing.B) {
	const d, h, kvh, hd, capacity, filled = 2048, 32, 4, 64, 1024, 512
	for _, repeated := range []bool{false, true} {
		name := "B1_d2048_h32_kvh4_dh64_C1024_n512/in_place"
		if repeated {
			name = "B1_d2048_h32_kvh4_dh64_C1024_n512/repeated"
		}
		b.Run(name, func(b *testing.B) {
			s, err := NewStore(WithSeed(1))
			if err != nil {
				b.Fatal(err)
			}
			a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: d, Heads: h, KVHeads: kvh, HeadDim: hd})
			if err != nil {
				b.Fatal(err)
			}
			caches := NewKVCaches([]*MultiHeadAttention{a}, 1, capacity, tensor.Float32)
			for _, c := range caches.Tensors {
				for i, v := range c.Data().([]float32) {
					c.Data().([]float32)[i] = v + float32(i%13)/13
				}
			}
			g := s.NewGraph()
			occupied := make([]float32, capacity)
			for j := range filled + 1 {
				occupied[j] = 1
			}
			mask := g.Bind("occupied", tensor.New(tensor.WithShape(1, capacity), tensor.WithBacking(occupied)))
			slot, err := g.IntConstant("slot", []int{filled}, 1)
			if err != nil {
				b.Fatal(err)
			}
			x := g.Bind("x", tensor.New(tensor.WithShape(1, 1, d), tensor.Of(tensor.Float32)))
			kv := caches.Bind(g, slot, nil)[0]
			var y *gorgonia.Node
			if repeated {
				y, err = forwardCachedRepeated(g, a, x, mask, kv)
			} else {
				y, err = a.ForwardCached(g, x, mask, kv)
			}
			if err != nil {
				b.Fatal(err)
			}
			_ = y
			m, err := g.Machine()
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			b.ResetTimer()
			for range b.N {
				if err := m.RunAll(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
