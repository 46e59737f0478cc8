// Command llamabench is issue 37's real-size generation benchmark: a
// LLaMA-shaped checkpoint with seeded random weights, zoo's batch-1 greedy
// decoding of it through the KV cache, the memory bandwidth that bounds
// that decoding, and the side-by-side table of zoo, the PyTorch
// re-implementation (tools/pytorch/llama_generate_bench.py) and llama.cpp
// (llama-bench on the same weights as GGUF, tools/llamabench/to_gguf.py).
// tools/bench.sh llama runs it all; docs/llama-generation.md has the
// numbers.
//
//	go run ./tools/llamabench write -preset tinyllama -out /tmp/tinyllama
//	go run ./tools/llamabench run -dir /tmp/tinyllama [-prompt 128] [-new 128] [-weights f32]
//	go run ./tools/llamabench load -dir /tmp/tinyllama [-weights f32]
//	go run ./tools/llamabench membw [-mib 1024] [-threads 2]
//	go run ./tools/llamabench table < results.jsonl
//
// write builds the preset (tinyllama: TinyLlama-1.1B's shape; smollm-135m:
// SmolLM-135M's, for a quick run) with transformers' initialisation,
// N(0, 0.02²) weights and unit RMSNorm weights, from -seed, and saves it as
// a Hugging Face folder: config.json, model.safetensors (float32) and a
// Llama-2-style byte-fallback BPE tokenizer.json of the preset's
// vocabulary size (synthetic merges; the benchmark feeds token ids).
//
// run loads the folder, then for each of -runs timed calls (after -warmup
// untimed ones, which compile the graphs) runs Generate on one prompt of
// -prompt ids, (7919·i + 13) mod V, for -new greedy tokens. It prints one
// JSON line per timed call (what table reads): the load time, the prefill
// (the prompt's pass and the first token) in tokens/s, ms per token over
// the later tokens, the whole call's ms per new token, the peak RSS, the
// bytes of weights one token reads, and the tokens.
//
// load loads the folder alone, in -weights' format, and prints the
// seconds it took and the peak RSS right after it (docs/memory.md).
//
// membw measures the read bandwidth, STREAM's idea reduced to a read:
// -threads goroutines each sum their part of a -mib buffer, far larger than
// the caches, as 64-bit integers with 8 accumulators; the best of -passes
// passes, in GB/s (10⁹ bytes per second). It prints one JSON line.
//
// table reads the JSON lines of any number of rounds and engines from
// standard input and prints, per engine and weight format, the median of
// its rounds (and their spread), the bound bytes/token ÷ bandwidth, each
// engine's fraction of it, and whether the engines' greedy tokens agree.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "llamabench:", err)
		os.Exit(1)
	}
}

// run dispatches to the subcommand args[0].
func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no subcommand; want write, run, load, membw or table (see go doc ./tools/llamabench)")
	}
	switch args[0] {
	case "write":
		return cmdWrite(args[1:], stdout)
	case "run":
		return cmdRun(args[1:], stdout)
	case "load":
		return cmdLoad(args[1:], stdout)
	case "membw":
		return cmdMembw(args[1:], stdout)
	case "table":
		return cmdTable(args[1:], stdin, stdout)
	}
	return fmt.Errorf("unknown subcommand %q; want write, run, load, membw or table", args[0])
}
