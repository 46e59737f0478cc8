package finetune

import (
	"fmt"

	"github.com/d73a19ff/zoo/train"
)

// resumeFree are the settings a resume may change: they do not change
// what is trained.
var resumeFree = []string{"resume", "force", "overwrite_output_dir", "output_dir", "workers", "eval_steps", "save_steps", "logging_steps"}

// record is what run.json records of a fine-tuning run: the whole
// configuration cfg (its JSON fields) but the settings a resume may
// change (resumeFree).
func record(cfg any) (train.Record, error) {
	r := train.Record{}
	if err := r.SetFields("", cfg, resumeFree...); err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	return r, nil
}

// validArgs is a.Validate with output_dir, when empty, dir: the default
// run directory the pipeline's Run fills in.
func validArgs(a train.Args, dir string) error {
	if a.OutputDir == "" {
		a.OutputDir = dir
	}
	return a.Validate()
}
