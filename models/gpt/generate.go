package gpt

import (
	"fmt"
	"strings"

	"gorgonia.org/tensor"
)

// Generate continues each prompt (token ids; prompts may differ in length
// and are left-padded into one batch) and returns the new tokens of each.
//
// With the KV cache (the default) the prompts run once and every later
// token costs one single-token pass over the cached keys and values. Once a
// row's context fills n_positions, decoding goes on with a sliding window,
// as nanoGPT does: each step reruns the last n_positions tokens, without the
// cache. Cached and uncached decoding give the same tokens.
func (m *Model) Generate(prompts [][]int, cfg GenerateConfig) ([][]int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := m.checkPrompts(prompts, cfg); err != nil {
		return nil, err
	}
	d := &decoder{m: m, cfg: cfg, smp: newSampler(cfg, len(prompts)), out: make([][]int, len(prompts)), done: make([]bool, len(prompts))}
	for _, p := range prompts {
		d.seqs = append(d.seqs, append([]int(nil), p...))
	}
	defer d.close()
	produced := 0
	if !cfg.NoCache {
		n, err := d.cached()
		if err != nil {
			return nil, err
		}
		produced = n
	}
	for ; produced < cfg.MaxNewTokens && !d.allDone(); produced++ {
		logits, err := d.uncachedStep()
		if err != nil {
			return nil, err
		}
		d.emit(logits)
	}
	return d.out, nil
}

func (m *Model) checkPrompts(prompts [][]int, cfg GenerateConfig) error {
	if len(prompts) == 0 {
		return fmt.Errorf("gpt generate: no prompts")
	}
	for r, p := range prompts {
		if len(p) == 0 {
			return fmt.Errorf("gpt generate: prompt %d is empty; start it with a token such as bos_token_id %d", r, m.Config.BOSTokenID)
		}
		if len(p) > m.Config.NPositions && cfg.NoSlidingWindow {
			return fmt.Errorf("gpt generate: prompt %d has %d tokens, more than the context of %d (n_positions); shorten it or allow the sliding window", r, len(p), m.Config.NPositions)
		}
		for i, id := range p {
			if id < 0 || id >= m.Config.VocabSize {
				return fmt.Errorf("gpt generate: prompt %d token %d is id %d, outside the vocabulary [0, %d)", r, i, id, m.Config.VocabSize)
			}
		}
	}
	return nil
}

// decoder is the state of one Generate call.
type decoder struct {
	m      *Model
	cfg    GenerateConfig
	smp    *sampler
	seqs   [][]int // each row's prompt and new tokens (finished rows repeat their last token)
	out    [][]int // each row's new tokens
	done   []bool
	full   map[int]*stepGraph // uncached graphs by context length
	graphs []*stepGraph
}

func (d *decoder) close() {
	for _, g := range d.graphs {
		g.close()
	}
}

func (d *decoder) allDone() bool {
	for _, x := range d.done {
		if !x {
			return false
		}
	}
	return true
}

// emit picks each unfinished row's next token from its logits and checks
// the stop conditions; finished rows still advance, repeating their last
// token, so that every row keeps the same length.
func (d *decoder) emit(logits [][]float64) {
	for r := range d.seqs {
		if d.done[r] {
			d.seqs[r] = append(d.seqs[r], d.seqs[r][len(d.seqs[r])-1])
			continue
		}
		tok := d.smp.next(r, logits[r])
		d.seqs[r] = append(d.seqs[r], tok)
		d.out[r] = append(d.out[r], tok)
		if d.cfg.OnToken != nil {
			d.cfg.OnToken(r, tok)
		}
		for _, e := range d.cfg.EOS {
			if tok == e {
				d.done[r] = true
			}
		}
		if len(d.cfg.StopStrings) > 0 {
			text := d.cfg.Decode(d.out[r])
			for _, s := range d.cfg.StopStrings {
				if s != "" && strings.Contains(text, s) {
					d.done[r] = true
				}
			}
		}
	}
}

// cached decodes through the KV cache until the context is full, and
// returns how many tokens it produced.
func (d *decoder) cached() (int, error) {
	n := d.m.Config.NPositions
	b, plen := len(d.seqs), 0
	for _, s := range d.seqs {
		plen = max(plen, len(s))
	}
	if plen > n {
		return 0, nil // the prompt alone overflows the context: sliding window from the start
	}
	capacity := max(plen, min(n, plen+d.cfg.MaxNewTokens-1))
	var caches []*tensor.Dense
	for _, l := range d.m.H.Layers {
		shape := l.SelfAttn.CacheShape(b, capacity)
		for range 2 {
			caches = append(caches, tensor.New(tensor.WithShape(shape...), tensor.Of(d.m.Store.Dtype())))
		}
	}
	pads := make([]int, b)
	for r, s := range d.seqs {
		pads[r] = plen - len(s)
	}
	occupied := make([]bool, b*capacity)
	setSlots := func(upto int) { // slots [0, upto) of each row hold its real tokens
		for r := range pads {
			for j := 0; j < capacity; j++ {
				occupied[r*capacity+j] = j < upto && j >= pads[r]
			}
		}
	}

	prefill, err := d.m.newCachedGraph(b, plen, caches)
	if err != nil {
		return 0, err
	}
	d.graphs = append(d.graphs, prefill)
	ids, pos := prefill.ids.Data().([]int), prefill.pos.Data().([]int)
	for r, s := range d.seqs {
		for j := 0; j < plen; j++ {
			ids[r*plen+j], pos[r*plen+j] = 0, 0
			if j >= pads[r] {
				ids[r*plen+j], pos[r*plen+j] = s[j-pads[r]], j-pads[r]
			}
		}
	}
	setSlots(plen)
	setMask(prefill.mask, occupied)
	logits, err := prefill.run()
	if err != nil {
		return 0, err
	}
	d.emit(logits)
	produced := 1

	step, err := d.m.newCachedGraph(b, 1, caches)
	if err != nil {
		return 0, err
	}
	d.graphs = append(d.graphs, step)
	ids, pos = step.ids.Data().([]int), step.pos.Data().([]int)
	for length := plen; produced < d.cfg.MaxNewTokens && !d.allDone() && length < capacity; length++ {
		for r, s := range d.seqs {
			ids[r], pos[r] = s[len(s)-1], length-pads[r]
		}
		step.slot.Data().([]int)[0] = length
		setSlots(length + 1)
		setMask(step.mask, occupied)
		if logits, err = step.run(); err != nil {
			return 0, err
		}
		d.emit(logits)
		produced++
	}
	return produced, nil
}

// uncachedStep runs the last n_positions tokens of every row (left-padded to
// a common length) and returns each row's next-token logits.
func (d *decoder) uncachedStep() ([][]float64, error) {
	l := 0
	for _, s := range d.seqs {
		l = max(l, len(s))
	}
	n := d.m.Config.NPositions
	if l > n && d.cfg.NoSlidingWindow {
		return nil, fmt.Errorf("gpt generate: the context reached %d tokens, more than n_positions %d, and the sliding window is off", l, n)
	}
	w := min(l, n)
	if d.full == nil {
		d.full = map[int]*stepGraph{}
	}
	g, ok := d.full[w]
	if !ok {
		var err error
		if g, err = d.m.newFullGraph(len(d.seqs), w); err != nil {
			return nil, err
		}
		d.full[w] = g
		d.graphs = append(d.graphs, g)
	}
	ids, pos := g.ids.Data().([]int), g.pos.Data().([]int)
	keep := make([]bool, len(d.seqs)*w)
	for r, s := range d.seqs {
		pad := l - len(s)
		first := max(pad, l-w) // the window's first real column
		for c := l - w; c < l; c++ {
			i := r*w + c - (l - w)
			ids[i], pos[i] = 0, 0
			if c >= pad {
				ids[i], pos[i], keep[i] = s[c-pad], c-first, true
			}
		}
	}
	setMask(g.mask, keep)
	return g.run()
}
