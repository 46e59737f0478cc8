package train

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/d73a19ff/zoo/internal/ckptfiles"
	"github.com/d73a19ff/zoo/internal/safetensors"
)

// StateFile is the conventional name of the optimizer state saved next to
// a checkpoint's model.safetensors.
const StateFile = ckptfiles.Optimizer

// stateFormat is the "format" metadata of a saved AdamW state.
const stateFormat = "zoo-adamw-1"

// The tensor-name prefixes of the moments, torch's state keys.
const (
	expAvg   = "exp_avg."
	expAvgSq = "exp_avg_sq."
)

// State encodes the optimizer state as a safetensors file image: for every
// parameter name, tensors "exp_avg.<name>" (m) and "exp_avg_sq.<name>" (v)
// of the parameter's shape and dtype (F32 or F64); metadata "format"
// ("zoo-adamw-1") and "step", plus the hyperparameters for information.
func (o *AdamW) State() ([]byte, error) {
	ts, meta, err := o.stateTensors()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := safetensors.Encode(&b, ts, meta); err != nil {
		return nil, fmt.Errorf("train: adamw state: %w", err)
	}
	return b.Bytes(), nil
}

// Save writes State to path atomically (a crash leaves the old file or
// the new one, never a mix).
func (o *AdamW) Save(path string) error {
	ts, meta, err := o.stateTensors()
	if err != nil {
		return err
	}
	if err := safetensors.WriteFile(path, ts, meta); err != nil {
		return fmt.Errorf("train: save adamw state: %w", err)
	}
	return nil
}

func (o *AdamW) stateTensors() ([]safetensors.Tensor, map[string]string, error) {
	var ts []safetensors.Tensor
	for _, s := range o.slots {
		shape := []int(s.p.Value.Shape())
		for _, mv := range []struct {
			prefix string
			f32    []float32
			f64    []float64
		}{{expAvg, s.m32, s.m64}, {expAvgSq, s.v32, s.v64}} {
			var t safetensors.Tensor
			var err error
			if mv.f32 != nil {
				t, err = safetensors.FromFloat32s(mv.prefix+s.p.Name, shape, mv.f32)
			} else {
				t, err = safetensors.FromFloat64s(mv.prefix+s.p.Name, shape, mv.f64)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("train: adamw state: %w", err)
			}
			ts = append(ts, t)
		}
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	meta := map[string]string{
		"format": stateFormat, "step": strconv.Itoa(o.step),
		"beta1": f(o.cfg.Beta1), "beta2": f(o.cfg.Beta2), "eps": f(o.cfg.Eps), "weight_decay": f(o.cfg.WeightDecay),
	}
	return ts, meta, nil
}

// StateError reports, all at once, every way a saved optimizer state
// disagrees with the optimizer it is restored into.
type StateError struct {
	Missing    []string // parameters of the optimizer the state has no moments for
	Unexpected []string // parameters (or other tensors) in the state the optimizer lacks
	Mismatched []string // "name: state F32 [3 4], parameter float64 [4 3]", bad values
}

// Error lists every disagreement.
func (e *StateError) Error() string {
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"missing", e.Missing}, {"unexpected", e.Unexpected}, {"mismatched", e.Mismatched}} {
		if len(p.names) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s: %s", len(p.names), p.what, strings.Join(p.names, "; ")))
		}
	}
	return "train: adamw state does not fit the parameters (" + strings.Join(parts, "; ") + ")"
}

// Restore replaces the step count and moments with a State image. Moments
// are matched by parameter name, so the order of parameters may differ
// from the saving optimizer's; shapes and dtypes must agree exactly. A
// missing, unexpected or mismatched parameter is a *StateError naming all
// of them, and then nothing changes. The hyperparameters in the metadata
// are not applied: those of this optimizer stay in force, as they would
// after changing a config between runs.
func (o *AdamW) Restore(data []byte) error {
	f, err := safetensors.Decode(data)
	if err != nil {
		return fmt.Errorf("train: restore adamw state: %w", err)
	}
	return o.restore(f)
}

// Load reads a file written by Save and restores it as Restore does.
func (o *AdamW) Load(path string) error {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return fmt.Errorf("train: load adamw state: %w", err)
	}
	if err := o.restore(f); err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	return nil
}

func (o *AdamW) restore(f *safetensors.File) error {
	meta := f.Metadata()
	if meta["format"] != stateFormat {
		return fmt.Errorf("train: restore adamw state: format %q, want %q", meta["format"], stateFormat)
	}
	step, err := strconv.Atoi(meta["step"])
	if err != nil || step < 0 {
		return fmt.Errorf("train: restore adamw state: step %q is not a count", meta["step"])
	}
	bySlot := map[string]*slot{}
	for _, s := range o.slots {
		bySlot[s.p.Name] = s
	}
	e := &StateError{}
	for _, key := range f.Names() {
		name, ok := strings.CutPrefix(key, expAvgSq)
		if !ok {
			name, ok = strings.CutPrefix(key, expAvg)
		}
		if !ok {
			e.Unexpected = append(e.Unexpected, key)
		} else if bySlot[name] == nil && !slices.Contains(e.Unexpected, name) {
			e.Unexpected = append(e.Unexpected, name)
		}
	}
	type moments struct{ m, v safetensors.Tensor }
	found := map[*slot]moments{}
	for _, s := range o.slots {
		m, okM := f.Tensor(expAvg + s.p.Name)
		v, okV := f.Tensor(expAvgSq + s.p.Name)
		if !okM || !okV {
			e.Missing = append(e.Missing, s.p.Name)
			continue
		}
		if msg := s.check(m, v); msg != "" {
			e.Mismatched = append(e.Mismatched, s.p.Name+": "+msg)
			continue
		}
		found[s] = moments{m, v}
	}
	if len(e.Missing)+len(e.Unexpected)+len(e.Mismatched) > 0 {
		return e
	}
	for s, mv := range found { // cannot fail: check converted both already
		if s.m32 != nil {
			m, _ := mv.m.Float32s()
			v, _ := mv.v.Float32s()
			copy(s.m32, m)
			copy(s.v32, v)
		} else {
			m, _ := mv.m.Float64s()
			v, _ := mv.v.Float64s()
			copy(s.m64, m)
			copy(s.v64, v)
		}
	}
	o.step = step
	return nil
}

// check returns why moments m and v do not fit the slot, or "".
func (s *slot) check(m, v safetensors.Tensor) string {
	want := safetensors.F64
	if s.m32 != nil {
		want = safetensors.F32
	}
	shape := []int(s.p.Value.Shape())
	for _, t := range []safetensors.Tensor{m, v} {
		if t.DType != want || !slices.Equal(t.Shape, shape) {
			return fmt.Sprintf("state %s %v, parameter %v %v", t.DType, t.Shape, s.p.Value.Dtype(), shape)
		}
	}
	mv, _ := m.Float64s()
	vv, _ := v.Float64s()
	if !finite(mv) {
		return "exp_avg holds NaN or Inf"
	}
	for _, x := range vv {
		if !(x >= 0) || x-x != 0 {
			return "exp_avg_sq holds a negative value, NaN or Inf"
		}
	}
	return ""
}
