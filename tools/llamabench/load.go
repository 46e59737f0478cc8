package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/d73a19ff/zoo/internal/peakrss"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// cmdLoad is llamabench load: what loading the checkpoint costs alone,
// llama.LoadForCausalLM's seconds and the process's peak resident set
// right after it, in -weights' format (run it in a process of its own,
// under /usr/bin/time -v for the kernel's count). It prints one JSON line.
func cmdLoad(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stdout)
	dir := fs.String("dir", "", "the checkpoint `folder` to load")
	weights := fs.String("weights", "f32", "the weight `format` to load in: f32, bf16 or int8")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("load: -dir is required")
	}
	f, err := models.ParseWeightFormat(*weights)
	if err != nil {
		return fmt.Errorf("load: -weights: %w", err)
	}
	t0 := time.Now()
	m, _, err := llama.LoadForCausalLM(*dir, models.WithWeightFormat(f))
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	mb, ok := peakrss.MB()
	if !ok {
		return fmt.Errorf("load: this system does not report a peak RSS")
	}
	return json.NewEncoder(stdout).Encode(map[string]any{
		"format": f, "load_s": secs, "peak_rss_mb": mb, "float32_params": m.NumParams(),
	})
}
