package finetune

// This file is token-level knowledge distillation for translation
// fine-tuning (distill_from): the teachers are checked against the
// student, their distributions computed (seq2seq.TeacherTargets) and
// given to the training data (pretrain.Seq2SeqData.SetTeacher), whose
// task then mixes them into its targets (pretrain.Seq2SeqTask.Distill).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/pretrain"
)

// CheckTeacher refuses teachers that do not read and write the
// student's ids: distillation compares distributions id by id, so the
// vocabularies and special ids must be one (seq2seq.NewEnsemble's check)
// and the tokenizers (tok, the student's; teacherTok, the teachers') the
// same serialised tokenizer.
func CheckTeacher(student *seq2seq.Model, teachers seq2seq.Ensemble, tok, teacherTok datasets.Tokenizer) error {
	if _, err := seq2seq.NewEnsemble(append(seq2seq.Ensemble{student}, teachers...)...); err != nil {
		return fmt.Errorf("seq2seq: distillation: the student is model 1: %w", err)
	}
	a, err := tok.MarshalJSON()
	if err != nil {
		return err
	}
	b, err := teacherTok.MarshalJSON()
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("seq2seq: the teachers' tokenizer differs from the student's: distillation needs the same ids (start the student from a checkpoint with the teachers' tokenizer, or give it with --tokenizer)")
	}
	return nil
}

// distill loads distill_from's teachers, checks that they share the
// student's ids, and gives data the mean of their distributions at every
// training label position (seq2seq.TeacherTargets).
func distill(ctx context.Context, c TranslationConfig, m *seq2seq.Model, tok datasets.Tokenizer, trainEx []seq2seq.Example, data *pretrain.Seq2SeqData, out io.Writer) error {
	began := time.Now()
	teachers, teacherTok, err := seq2seq.LoadEnsemble(c.DistillFrom)
	if err != nil {
		return fmt.Errorf("finetune: distill_from: %w", err)
	}
	if err := CheckTeacher(m, teachers, tok, teacherTok); err != nil {
		return fmt.Errorf("finetune: distill_from %s: %w", c.DistillFrom, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("finetune: %w", err)
	}
	soft, err := seq2seq.TeacherTargets(teachers, trainEx, c.DistillTopK, c.BatchSize)
	if err != nil {
		return fmt.Errorf("finetune: distill_from: %w", err)
	}
	if err := data.SetTeacher(soft); err != nil {
		return fmt.Errorf("finetune: %w", err)
	}
	fmt.Fprintf(out, "distillation: %d teacher(s) (%s), alpha %g, top %d tokens a position; %d training pairs' distributions in %.1f s\n",
		len(teachers), c.DistillFrom, c.DistillAlpha, c.DistillTopK, len(trainEx), time.Since(began).Seconds())
	return nil
}
