package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"time"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/peakrss"
	"github.com/d73a19ff/zoo/models/llama"
)

// result is one timed generation of one engine, one JSON line of run's
// output and of table's input; llama_generate_bench.py writes the same
// fields, and tools/bench.sh turns llama-bench's output into them.
type result struct {
	Engine string `json:"engine"` // zoo, pytorch, llama.cpp
	Format string `json:"format"` // f32, bf16, int8, q8_0
	Model  string `json:"model"`  // the checkpoint folder's name
	Prompt int    `json:"prompt"` // prompt tokens
	New    int    `json:"new"`    // new tokens
	// LoadS is the checkpoint's load time in seconds (0: not measured).
	LoadS float64 `json:"load_s"`
	// PrefillTokS is prompt tokens per second of the prefill: the prompt's
	// pass and the first new token.
	PrefillTokS float64 `json:"prefill_tok_s"`
	// MsPerToken is the time per new token after the first (decoding
	// steps through the KV cache), in ms.
	MsPerToken float64 `json:"ms_per_token"`
	// CallMsPerToken is the whole call, prefill included, over New, in ms
	// (0: not measured).
	CallMsPerToken float64 `json:"call_ms_per_token,omitempty"`
	PeakRSSMB      float64 `json:"peak_rss_mb"` // the process's peak resident set, MB (10⁶ bytes)
	// WeightBytes is the bytes of weights one decoding step reads: every
	// matrix and norm once, the embedding table only where it is the
	// tied head (a lookup reads one row).
	WeightBytes float64 `json:"weight_bytes"`
	Threads     int     `json:"threads"`
	Tokens      []int   `json:"tokens,omitempty"` // the greedy tokens
}

func cmdRun(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	dir := fs.String("dir", "", "checkpoint folder (from write)")
	promptLen := fs.Int("prompt", 128, "prompt tokens")
	newTokens := fs.Int("new", 128, "new tokens, greedy")
	runs := fs.Int("runs", 2, "timed calls, one JSON line each")
	warmup := fs.Int("warmup", 1, "untimed calls first (they compile the graphs)")
	format := fs.String("weights", "f32", "weight format for decoding: "+weightFormatsHelp)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("run: -dir is required: a checkpoint folder (llamabench write makes one)")
	}
	if *promptLen < 1 || *newTokens < 2 || *runs < 1 || *warmup < 0 {
		return fmt.Errorf("run: want -prompt ≥ 1, -new ≥ 2, -runs ≥ 1 and -warmup ≥ 0")
	}
	opts, canon, err := loadOptions(*format)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	start := time.Now()
	m, _, err := llama.LoadForCausalLM(*dir, opts...)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	load := time.Since(start).Seconds()
	prompt := promptIDs(*promptLen, m.Config.VocabSize)
	base := result{
		Engine: "zoo", Format: canon, Model: filepath.Base(filepath.Clean(*dir)),
		Prompt: *promptLen, New: *newTokens, LoadS: load,
		WeightBytes: weightBytes(m.Config, canon), Threads: runtime.GOMAXPROCS(0),
	}
	for i := 0; i < *warmup+*runs; i++ {
		r, err := timeGenerate(m, prompt, *newTokens)
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		if i < *warmup {
			continue
		}
		r.Engine, r.Format, r.Model, r.Prompt, r.New, r.LoadS = base.Engine, base.Format, base.Model, base.Prompt, base.New, base.LoadS
		r.WeightBytes, r.Threads = base.WeightBytes, base.Threads
		if mb, ok := peakrss.MB(); ok {
			r.PeakRSSMB = mb
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
	}
	return nil
}

// promptIDs is the benchmark's prompt: n ids (7919·i + 13) mod vocab, as
// models/gpt's BenchmarkGenerateGPT2Small and the PyTorch side have them.
func promptIDs(n, vocab int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = (7919*i + 13) % vocab
	}
	return p
}

// timeGenerate decodes newTokens greedy tokens after prompt and times the
// prefill (up to the first token) and the steps after it.
func timeGenerate(m *llama.ForCausalLM, prompt []int, newTokens int) (result, error) {
	times := make([]time.Time, 0, newTokens)
	cfg := llama.GenerateConfig{SampleConfig: decode.Greedy(newTokens)}
	cfg.OnToken = func(int, int) { times = append(times, time.Now()) }
	start := time.Now()
	out, err := m.Generate([][]int{prompt}, cfg)
	end := time.Now()
	if err != nil {
		return result{}, err
	}
	if len(out[0]) != newTokens || len(times) != newTokens {
		return result{}, fmt.Errorf("%d new tokens (%d callbacks), want %d", len(out[0]), len(times), newTokens)
	}
	prefill := times[0].Sub(start).Seconds()
	return result{
		PrefillTokS:    float64(len(prompt)) / prefill,
		MsPerToken:     times[newTokens-1].Sub(times[0]).Seconds() * 1e3 / float64(newTokens-1),
		CallMsPerToken: end.Sub(start).Seconds() * 1e3 / float64(newTokens),
		Tokens:         out[0],
	}, nil
}

// weightBytes is the bytes of weights one decoding step of c reads in
// format: the matrices at the format's width (int8: one byte a weight and
// a float32 scale per block of 32, as models.WeightsInt8 holds them), the
// RMSNorm weights in float32,
// and the embedding table only where it is the tied head (a lookup reads
// one row of it).
func weightBytes(c llama.Config, format string) float64 {
	d, ff, v, l := float64(c.HiddenSize), float64(c.IntermediateSize), float64(c.VocabSize), float64(c.NumHiddenLayers)
	hd, q, kv := float64(c.HeadDimension()), float64(c.NumAttentionHeads), float64(c.KVHeads())
	perLayerMatrices := d*hd*q + 2*d*hd*kv + hd*q*d + 3*d*ff
	matrices := l*perLayerMatrices + v*d
	norms := (2*l + 1) * d * 4
	switch format {
	case "bf16":
		return 2*matrices + norms
	case "int8":
		return matrices*(1+4.0/32) + norms
	}
	return 4*matrices + norms
}
