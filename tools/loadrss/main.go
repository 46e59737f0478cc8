// Command loadrss measures what loading a LLaMA-family checkpoint costs:
// the seconds llama.LoadForCausalLM takes and the process's peak resident
// set size (internal/peakrss), for a weight format. "write" makes a
// checkpoint of a preset's shape with random weights to load.
//
//	go run ./tools/loadrss write -preset smollm-135m -out /tmp/lm/smollm
//	go build -o /tmp/loadrss ./tools/loadrss
//	/usr/bin/time -v /tmp/loadrss load -dir /tmp/lm/smollm -format int8
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/d73a19ff/zoo/internal/peakrss"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

var presets = map[string]func() llama.Config{
	"smollm-135m":    llama.SmolLM135M,
	"tinyllama-1.1b": llama.TinyLlama,
	"qwen2.5-0.5b":   llama.Qwen25_0_5B,
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "loadrss:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: loadrss write -preset P -out DIR | loadrss load -dir DIR [-format f32|bf16|int8]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	preset := fs.String("preset", "smollm-135m", "the shape to write: smollm-135m, tinyllama-1.1b or qwen2.5-0.5b")
	out := fs.String("out", "", "the checkpoint `dir` to write")
	dir := fs.String("dir", "", "the checkpoint `dir` to load")
	format := fs.String("format", "f32", "the weight format to load in: f32, bf16 or int8")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "write":
		p, ok := presets[*preset]
		if !ok || *out == "" {
			return fmt.Errorf("write needs -out and a known -preset, not %q", *preset)
		}
		m, err := llama.NewForCausalLM(p(), layers.WithSeed(1))
		if err != nil {
			return err
		}
		return m.Save(*out)
	case "load":
		f, err := models.ParseWeightFormat(*format)
		if err != nil {
			return err
		}
		t0 := time.Now()
		m, _, err := llama.LoadForCausalLM(*dir, models.WithWeightFormat(f))
		if err != nil {
			return err
		}
		secs := time.Since(t0).Seconds()
		mb, _ := peakrss.MB()
		fmt.Printf("format %s: %d parameters left float32, load %.2f s, peak RSS %.0f MB\n", f, m.NumParams(), secs, mb)
		return nil
	}
	return fmt.Errorf("unknown command %q: write or load", args[0])
}
