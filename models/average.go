package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/safetensors"
)

// Average writes to dst a checkpoint whose weights are the element-wise
// mean of the checkpoints srcs, as fairseq's average_checkpoints.py and
// Marian's average.py do (Vaswani et al. 2017 average the last 5 or 20
// checkpoints of their base and big models): a cheap gain for a model
// whose last checkpoints sit around a minimum rather than at it.
//
// Every source must be a checkpoint of the same model: equal config.json
// (as JSON values), equal tokenizer.json and preprocessor_config.json when
// they exist, and model.safetensors files with the same tensor names,
// dtypes and shapes. Floating-point tensors (F32, F64) are summed in
// float64 in the order of srcs and divided by len(srcs); tensors of any
// other dtype must be equal in every source and are copied. The metadata
// of the first source's model.safetensors is kept.
//
// dst gets the model's files only: model.safetensors and every other
// regular file of the last source (config.json, tokenizer.json,
// generation_config.json, ...) except the training state
// (optimizer.safetensors, trainer.json), which
// belongs to one point of a run, not to an average; so dst is for
// evaluation, decoding and fine-tuning (--init-from), not --resume. It is
// written into a temporary directory beside dst and renamed into place, so
// a crash leaves no partial dst. dst must not exist yet.
func Average(dst string, srcs []string) error {
	if len(srcs) == 0 {
		return errors.New("average: no checkpoints given")
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("average: %s already exists; give a new directory (nothing is overwritten)", dst)
	}
	if err := checkSameModel(srcs); err != nil {
		return err
	}
	tensors, meta, err := averageWeights(srcs)
	if err != nil {
		return err
	}
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("average: %w", err)
	}
	tmp, err := atomicfile.MkdirTemp(parent, "."+filepath.Base(dst)+".tmp-") // 0777 less the umask
	if err != nil {
		return fmt.Errorf("average: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := safetensors.WriteFile(filepath.Join(tmp, WeightsFile), tensors, meta); err != nil {
		return fmt.Errorf("average: %w", err)
	}
	if err := copyModelFiles(srcs[len(srcs)-1], tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("average: %w", err)
	}
	return nil
}

// trainingState lists the files of a checkpoint that record one point of
// a run; an averaged checkpoint does not get them.
var trainingState = map[string]bool{OptimizerFile: true, TrainerFile: true}

// checkSameModel checks that every source is a checkpoint directory of the
// same model as the first: its family, config.json as a JSON value, and
// the bytes of its tokenizer.json and preprocessor_config.json.
func checkSameModel(srcs []string) error {
	first, err := Open(srcs[0])
	if err != nil {
		return fmt.Errorf("average: %w", err)
	}
	firstCfg, err := configValue(srcs[0])
	if err != nil {
		return err
	}
	for _, src := range srcs[1:] {
		if _, err := Open(src); err != nil {
			return fmt.Errorf("average: %w", err)
		}
		cfg, err := configValue(src)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(cfg, firstCfg) {
			return fmt.Errorf("average: %s and %s have different %s: only checkpoints of one model (one run) can be averaged", first.Dir, src, ConfigFile)
		}
		for _, name := range []string{TokenizerFile, PreprocessorFile} {
			a, errA := os.ReadFile(filepath.Join(srcs[0], name))
			b, errB := os.ReadFile(filepath.Join(src, name))
			if errors.Is(errA, os.ErrNotExist) && errors.Is(errB, os.ErrNotExist) {
				continue
			}
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				return fmt.Errorf("average: %s and %s have different %s files: only checkpoints of one model (one run) can be averaged", first.Dir, src, name)
			}
		}
	}
	return nil
}

func configValue(dir string) (any, error) {
	raw, err := readConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("average: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("average: %s: %w", filepath.Join(dir, ConfigFile), err)
	}
	return v, nil
}

// averageWeights reads each source's model.safetensors in turn (one in
// memory at a time, besides the float64 sums) and returns the averaged
// tensors in the first source's order, with its metadata.
func averageWeights(srcs []string) ([]safetensors.Tensor, map[string]string, error) {
	type slot struct {
		ref safetensors.Tensor // the first source's tensor
		sum []float64          // nil: not floating point, copied
	}
	var slots []*slot
	byName := make(map[string]*slot)
	var meta map[string]string
	for i, src := range srcs {
		path := filepath.Join(src, WeightsFile)
		f, err := safetensors.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("average: %w", err)
		}
		names := f.Names()
		if i == 0 {
			meta = f.Metadata()
			for _, name := range names {
				t, _ := f.Tensor(name)
				s := &slot{ref: t}
				if isFloat(t.DType) {
					v, err := t.Float64s()
					if err != nil {
						return nil, nil, fmt.Errorf("average: %s: %s: %w", path, name, err)
					}
					s.sum = v
					s.ref.Data = nil // the sums hold it; free the file
				} else {
					s.ref.Data = append([]byte(nil), t.Data...)
				}
				slots = append(slots, s)
				byName[name] = s
			}
			continue
		}
		if len(names) != len(slots) {
			return nil, nil, fmt.Errorf("average: %s has %d tensors, %s has %d: not checkpoints of one model", path, len(names), filepath.Join(srcs[0], WeightsFile), len(slots))
		}
		for _, name := range names {
			s, ok := byName[name]
			if !ok {
				return nil, nil, fmt.Errorf("average: %s has tensor %q, which %s has not", path, name, filepath.Join(srcs[0], WeightsFile))
			}
			t, _ := f.Tensor(name)
			if t.DType != s.ref.DType || !reflect.DeepEqual(t.Shape, s.ref.Shape) {
				return nil, nil, fmt.Errorf("average: %s: tensor %q is %s %v, in %s it is %s %v", path, name, t.DType, t.Shape, filepath.Join(srcs[0], WeightsFile), s.ref.DType, s.ref.Shape)
			}
			if s.sum == nil {
				if !bytes.Equal(t.Data, s.ref.Data) {
					return nil, nil, fmt.Errorf("average: %s: tensor %q (%s) differs from %s's, and only floating-point tensors are averaged", path, name, t.DType, srcs[0])
				}
				continue
			}
			v, err := t.Float64s()
			if err != nil {
				return nil, nil, fmt.Errorf("average: %s: %s: %w", path, name, err)
			}
			for j, x := range v {
				s.sum[j] += x
			}
		}
	}
	out := make([]safetensors.Tensor, 0, len(slots))
	n := float64(len(srcs))
	for _, s := range slots {
		if s.sum == nil {
			out = append(out, s.ref)
			continue
		}
		for j := range s.sum {
			s.sum[j] /= n
		}
		var t safetensors.Tensor
		var err error
		switch s.ref.DType {
		case safetensors.F64:
			t, err = safetensors.FromFloat64s(s.ref.Name, s.ref.Shape, s.sum)
		default: // F32
			v := make([]float32, len(s.sum))
			for j, x := range s.sum {
				v[j] = float32(x)
			}
			t, err = safetensors.FromFloat32s(s.ref.Name, s.ref.Shape, v)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("average: %s: %w", s.ref.Name, err)
		}
		out = append(out, t)
	}
	return out, meta, nil
}

// isFloat reports whether tensors of d are averaged: the dtypes zoo writes
// (F32) and F64. Half precision is copied only if equal, since averaging it
// would need an encoder zoo does not have.
func isFloat(d safetensors.DType) bool { return d == safetensors.F32 || d == safetensors.F64 }

// copyModelFiles copies every regular file of src except the weights and
// the training state into dir, each atomically.
func copyModelFiles(src, dir string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("average: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || name == WeightsFile || trainingState[name] {
			continue
		}
		in, err := os.Open(filepath.Join(src, name))
		if err != nil {
			return fmt.Errorf("average: %w", err)
		}
		err = atomicfile.WriteFile(filepath.Join(dir, name), func(w io.Writer) error {
			_, err := io.Copy(w, in)
			return err
		})
		in.Close()
		if err != nil {
			return fmt.Errorf("average: %w", err)
		}
	}
	return nil
}
