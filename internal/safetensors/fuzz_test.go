package safetensors

import (
	"bytes"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzDecode checks that Decode never panics, that its errors carry the
// package prefix, and that anything it accepts re-encodes and decodes to
// the same tensors and metadata.
func FuzzDecode(f *testing.F) {
	for _, tc := range roundTripCases(f) {
		var buf bytes.Buffer
		if err := Encode(&buf, tc.tensors, tc.metadata); err != nil {
			f.Fatalf("seed %s: %v", tc.name, err)
		}
		f.Add(buf.Bytes())
	}
	f.Add(rawFile(handBuiltHeader, true, f32Bytes(1.5, -2.25)))
	f.Add(rawFile(`{"__metadata__":null,`+ent("e", "BOOL", "[0,5]", "[0,0]")+`,`+ent("i", "I32", "[]", "[0,4]")+`}`, false, []byte{1, 2, 3, 4}))
	for _, tc := range malformedCases {
		f.Add(tc.data)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		var tensors []Tensor
		for _, name := range file.Names() {
			tn, ok := file.Tensor(name)
			if !ok {
				t.Fatalf("Names lists %q but Tensor does not find it", name)
			}
			// Conversions must not panic on anything Decode accepts.
			if _, err := tn.Float64s(); err != nil {
				t.Fatalf("Float64s(%q): %v", name, err)
			}
			if _, err := tn.Float32s(); err != nil {
				t.Fatalf("Float32s(%q): %v", name, err)
			}
			_, _ = tn.Int64s()
			tensors = append(tensors, tn)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, tensors, file.Metadata()); err != nil {
			t.Fatalf("re-encode of accepted input: %v", err)
		}
		again, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatalf("decode of re-encoded input: %v", err)
		}
		assertSameFile(t, file, again)
	})
}

func assertSameFile(t *testing.T, want, got *File) {
	t.Helper()
	if !slices.Equal(want.Names(), got.Names()) {
		t.Fatalf("names: got %q, want %q", got.Names(), want.Names())
	}
	for _, name := range want.Names() {
		a, _ := want.Tensor(name)
		b, _ := got.Tensor(name)
		if a.Name != b.Name || a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) || !bytes.Equal(a.Data, b.Data) {
			t.Fatalf("tensor %q: got %+v, want %+v", name, b, a)
		}
	}
	if !maps.Equal(want.Metadata(), got.Metadata()) {
		t.Fatalf("metadata: got %q, want %q", got.Metadata(), want.Metadata())
	}
}

// FuzzOpenFile checks that OpenFile, which reads only the header of a
// file, accepts exactly what Decode accepts, and that its tensors read
// from disk (ReadTensor, ReadFloat32s) are Decode's, bit for bit.
func FuzzOpenFile(f *testing.F) {
	for _, tc := range roundTripCases(f) {
		var buf bytes.Buffer
		if err := Encode(&buf, tc.tensors, tc.metadata); err != nil {
			f.Fatalf("seed %s: %v", tc.name, err)
		}
		f.Add(buf.Bytes())
	}
	for _, tc := range malformedCases {
		f.Add(tc.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.safetensors")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want, derr := Decode(data)
		got, err := OpenFile(path)
		if (err == nil) != (derr == nil) {
			t.Fatalf("OpenFile error %v, Decode error %v", err, derr)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		defer got.Close()
		if !slices.Equal(want.Names(), got.Names()) {
			t.Fatalf("names: got %q, want %q", got.Names(), want.Names())
		}
		for _, name := range want.Names() {
			w, _ := want.Tensor(name)
			g, err := got.ReadTensor(name)
			if err != nil {
				t.Fatalf("ReadTensor(%q): %v", name, err)
			}
			if !bytes.Equal(w.Data, g.Data) || w.DType != g.DType || !slices.Equal(w.Shape, g.Shape) {
				t.Fatalf("tensor %q: got %+v, want %+v", name, g, w)
			}
			switch w.DType {
			case F64, F32, F16, BF16:
				wv, _ := w.Float32s()
				gv := make([]float32, len(wv))
				if err := got.ReadFloat32s(name, gv); err != nil {
					t.Fatalf("ReadFloat32s(%q): %v", name, err)
				}
				for i := range wv {
					if math.Float32bits(wv[i]) != math.Float32bits(gv[i]) {
						t.Fatalf("%q element %d: %g, want %g", name, i, gv[i], wv[i])
					}
				}
			}
		}
	})
}
