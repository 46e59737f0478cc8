package seq2seq

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/models"
)

// Ensemble decodes with several models of one vocabulary at once: at every
// step each model reads the same prefix, and the next token's distribution
// is the mean of the models' distributions, log(Σₘ Pₘ / M), as fairseq's
// ensemble of several --path checkpoints. Greedy and beam search then run
// on it unchanged, so a hypothesis's log P is the sum of those log-means.
// An ensemble of one model decodes exactly as the model.
//
// The models may differ in width, depth and training; they must share the
// token ids (vocabulary sizes, pad, eos and decoder start), which
// NewEnsemble checks. Outputs are at most the shortest max_len.
//
// An Ensemble is safe for concurrent use by multiple goroutines as its
// models are, and its models may decode alone or in other ensembles at
// the same time: every call takes graphs of its own from each model.
type Ensemble []*Model

var errNoModels = errors.New("seq2seq ensemble: no models")

// NewEnsemble checks that the models can decode together and returns them
// as an ensemble.
func NewEnsemble(ms ...*Model) (Ensemble, error) {
	if len(ms) == 0 {
		return nil, errNoModels
	}
	a := ms[0].Config
	for i, m := range ms[1:] {
		b := m.Config
		for _, f := range []struct {
			name string
			a, b int
		}{{"vocab_size", a.SrcVocabSize, b.SrcVocabSize}, {"decoder_vocab_size", a.TgtVocabSize, b.TgtVocabSize},
			{"pad_token_id", a.PadTokenID, b.PadTokenID}, {"eos_token_id", a.EOSTokenID, b.EOSTokenID},
			{"decoder_start_token_id", a.BOSTokenID, b.BOSTokenID}} {
			if f.a != f.b {
				return nil, fmt.Errorf("seq2seq ensemble: model %d's %s is %d, model 1's %d: an ensemble needs one vocabulary (models trained with the same tokenizer)", i+2, f.name, f.b, f.a)
			}
		}
	}
	return Ensemble(ms), nil
}

// LoadEnsemble reads the checkpoints of a comma-separated list, DIR or
// DIR1,DIR2,…: one model, or several that decode as an ensemble, which
// must share one tokenizer.json byte for byte. It returns their
// tokenizer.
func LoadEnsemble(list string) (Ensemble, datasets.Tokenizer, error) {
	dirs := strings.Split(list, ",")
	var ms []*Model
	var tok datasets.Tokenizer
	var tokJSON []byte
	for i, dir := range dirs {
		if dir = strings.TrimSpace(dir); dir == "" {
			return nil, nil, fmt.Errorf("%q: checkpoint %d of the list is empty", list, i+1)
		}
		m, _, err := Load(dir)
		if err != nil {
			return nil, nil, err
		}
		b, err := os.ReadFile(filepath.Join(dir, models.TokenizerFile))
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			if tok, err = models.LoadTokenizer(dir); err != nil {
				return nil, nil, err
			}
			tokJSON = b
		} else if !bytes.Equal(b, tokJSON) {
			return nil, nil, fmt.Errorf("%s has another %s than %s: an ensemble's models must share one tokenizer (train them on the same data, or with the same \"tokenizer\")", dir, models.TokenizerFile, strings.TrimSpace(dirs[0]))
		}
		ms = append(ms, m)
	}
	e, err := NewEnsemble(ms...)
	return e, tok, err
}

// addSoftmax adds the softmax of logits to acc: an ensemble's members'
// probabilities summed.
func addSoftmax(acc, logits []float64) {
	lse := decode.LogSumExp(logits)
	for v, x := range logits {
		acc[v] += math.Exp(x - lse)
	}
}

// DecodeBytes is the memory of decoding with every model at once
// (Config.DecodeBytes, summed).
func (e Ensemble) DecodeBytes(batch, beam, ts, tt int) int64 {
	var n int64
	for _, m := range e {
		n += m.Config.DecodeBytes(batch, beam, ts, tt)
	}
	return n
}

// MaxLen is the shortest max_len of the models: the longest source, and
// the most tokens an output may have.
func (e Ensemble) MaxLen() int {
	if len(e) == 0 {
		return 0
	}
	n := e[0].Config.MaxLen
	for _, m := range e[1:] {
		n = min(n, m.Config.MaxLen)
	}
	return n
}

// Greedy is Model.Greedy on the ensemble's mean distribution, with the
// first model's generation rules (or cfg.Generation) and at most the
// shortest max_len tokens. Calls on several goroutines at once are safe.
func (e Ensemble) Greedy(srcs [][]int, cfg DecodeConfig) ([][]int, error) {
	if len(e) == 0 {
		return nil, errNoModels
	}
	if len(e) == 1 {
		return e[0].Greedy(srcs, cfg)
	}
	return greedy(e[0], srcs, cfg, e.MaxLen(), func(cfg DecodeConfig) (stepper, error) { return e.start(srcs, 1, cfg) })
}

// BeamSearch is Model.BeamSearch on the ensemble's mean distribution, with
// the first model's generation rules (or cfg.Generation) and at most the
// shortest max_len tokens. Calls on several goroutines at once are safe.
func (e Ensemble) BeamSearch(srcs [][]int, cfg DecodeConfig) ([][]Hypothesis, error) {
	if len(e) == 0 {
		return nil, errNoModels
	}
	if len(e) == 1 {
		return e[0].BeamSearch(srcs, cfg)
	}
	return beamSearch(e[0], srcs, cfg, e.MaxLen(), func(cfg DecodeConfig) (stepper, error) { return e.start(srcs, cfg.Beam, cfg) })
}

// start starts every model's decoder on the sources and joins them.
func (e Ensemble) start(srcs [][]int, beams int, cfg DecodeConfig) (stepper, error) {
	s := &ensembleStep{parts: make([]stepper, 0, len(e))}
	for i, m := range e {
		p, err := m.start(srcs, beams, cfg)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("seq2seq ensemble: model %d: %w", i+1, err)
		}
		s.parts = append(s.parts, p)
	}
	return s, nil
}

// ensembleStep is the decoder steps of several models over the same rows;
// its logits are the log of the mean of their softmaxes.
type ensembleStep struct {
	parts []stepper
	out   [][]float64 // (R, V): the summed probabilities, then their log-mean; reused
}

func (s *ensembleStep) Step(seqs [][]int) ([][]float64, error) {
	for i, p := range s.parts {
		logits, err := p.Step(seqs)
		if err != nil {
			return nil, fmt.Errorf("seq2seq ensemble: model %d: %w", i+1, err)
		}
		if i == 0 {
			if len(s.out) != len(logits) {
				s.out = make([][]float64, len(logits))
			}
			for r, row := range logits {
				if len(s.out[r]) != len(row) {
					s.out[r] = make([]float64, len(row))
				} else {
					clear(s.out[r])
				}
			}
		}
		for r, row := range logits {
			acc := s.out[r]
			if len(row) != len(acc) {
				return nil, fmt.Errorf("seq2seq ensemble: model %d gives %d logits, model 1 %d", i+1, len(row), len(acc))
			}
			addSoftmax(acc, row)
		}
	}
	n := float64(len(s.parts))
	for _, row := range s.out {
		for v, p := range row {
			row[v] = math.Log(p / n)
		}
	}
	return s.out, nil
}

func (s *ensembleStep) Reorder(parents []int) error {
	for i, p := range s.parts {
		if err := p.Reorder(parents); err != nil {
			return fmt.Errorf("seq2seq ensemble: model %d: %w", i+1, err)
		}
	}
	return nil
}

func (s *ensembleStep) close() {
	for _, p := range s.parts {
		p.close()
	}
}
