package finetune

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/d73a19ff/zoo/internal/runinfo"
	"github.com/d73a19ff/zoo/train"
)

// resumeFree are the settings a resume may change: they do not change
// what is trained.
var resumeFree = []string{"resume", "force", "overwrite_output_dir", "output_dir", "workers", "eval_steps", "save_steps", "logging_steps"}

// prepare readies the run directory (train.PrepareRun) and records cfg,
// the whole configuration of the run (its JSON fields), in run.json; on a
// resume it compares cfg with the run's record instead: a difference is
// an error naming it, unless Force (then it is printed on out).
func (s Training) prepare(cfg any, out io.Writer) error {
	if err := train.PrepareRun(s.OutputDir, s.Resume, s.OverwriteOutputDir, out); err != nil {
		return err
	}
	now := runinfo.Record{}
	if err := now.SetFields("", cfg, resumeFree...); err != nil {
		return fmt.Errorf("finetune: %w", err)
	}
	if !s.Resume {
		return runinfo.Write(s.OutputDir, now)
	}
	run, err := runinfo.Read(s.OutputDir)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "resume: %s has no %s: the settings cannot be checked against the run's\n", s.OutputDir, runinfo.File)
		return nil
	} else if err != nil {
		return fmt.Errorf("finetune: resume: %w", err)
	}
	diff := runinfo.Diff(run, now)
	switch {
	case len(diff) == 0:
		return nil
	case !s.Force:
		return fmt.Errorf("finetune: resume: the settings given now differ from the run in %s:\n  %s\nresume with the run's data and settings, or give --force (force: true) to go on with these", s.OutputDir, strings.Join(diff, "\n  "))
	}
	fmt.Fprintf(out, "resume: --force: going on although the settings differ from the run in %s:\n  %s\n", s.OutputDir, strings.Join(diff, "\n  "))
	return nil
}

// start builds the engine for task (trainer) and, with Resume, restores
// it from the run directory's latest checkpoint.
func (s Training) start(task train.Task, data train.Data, o engine, out io.Writer) (*train.Trainer, error) {
	tr, err := s.trainer(task, data, o)
	if err != nil {
		return nil, err
	}
	if err := s.resume(tr, out); err != nil {
		tr.Close()
		return nil, err
	}
	return tr, nil
}

// resume restores tr from the run directory's latest checkpoint when
// Resume is set.
func (s Training) resume(tr *train.Trainer, out io.Writer) error {
	if !s.Resume {
		return nil
	}
	latest, err := train.Latest(s.OutputDir)
	if err != nil {
		return fmt.Errorf("%w (a fine-tuning run writes step checkpoints with --save-interval, and one when interrupted)", err)
	}
	if err := tr.Resume(latest); err != nil {
		return err
	}
	fmt.Fprintf(out, "resume: from %s at step %d\n", latest, tr.Step())
	return nil
}
