package main

import (
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/train"
)

// runAverage is `zoo average --out DIR (--run RUN --last N | CKPT...)`:
// checkpoint averaging (models.Average), as fairseq's
// average_checkpoints.py.
func runAverage(args []string, stdout io.Writer) error {
	fs := newFlags("zoo average", `usage: zoo average --out DIR --run RUN --last N
       zoo average --out DIR CKPT CKPT...

Writes a checkpoint whose weights are the mean of several checkpoints of one
run, as fairseq's average_checkpoints.py (the Transformer paper averages its
last 5 checkpoints). --run RUN --last N takes the run's N checkpoints with
the highest steps (step-N and final; not best); or name the checkpoint
directories. They must share config.json and tokenizer. DIR gets the model
and its tokenizer, not the optimizer state: evaluate it, decode with it, or
fine-tune from it with --init-from; it does not --resume.`)
	out := fs.String("out", "", "directory to write (must not exist)")
	run := fs.String("run", "", "run directory whose last checkpoints to average (with --last)")
	last := fs.Int("last", 0, "with --run: how many of its last checkpoints")
	help, dirs, err := fs.parseTexts(args, stdout)
	if help || err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: --out DIR is required", errUsage)
	}
	switch {
	case *run != "" && len(dirs) > 0:
		return fmt.Errorf("%w: give --run RUN --last N or checkpoint directories, not both", errUsage)
	case *run != "":
		if *last < 1 {
			return fmt.Errorf("%w: --run needs --last N, N at least 1", errUsage)
		}
		if dirs, err = train.LastCheckpoints(*run, *last); err != nil {
			return err
		}
	case *last != 0:
		return fmt.Errorf("%w: --last goes with --run RUN", errUsage)
	case len(dirs) == 0:
		return fmt.Errorf("%w: no checkpoints: give --run RUN --last N, or checkpoint directories", errUsage)
	}
	if err := models.Average(*out, dirs); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "averaged %d checkpoints into %s:\n", len(dirs), *out)
	for _, d := range dirs {
		fmt.Fprintf(stdout, "  %s\n", d)
	}
	return nil
}
