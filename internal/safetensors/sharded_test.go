package safetensors

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// shardTensor is a small F32 tensor whose values tell it apart.
func shardTensor(t *testing.T, name string, v float32) Tensor {
	t.Helper()
	x, err := FromFloat32s(name, []int{2}, []float32{v, -v})
	require.NoError(t, err)
	return x
}

// writeSharded writes shards (file name → tensor names) into dir, each
// tensor's values its position in names, and the index weightMap (nil:
// the shards' own map).
func writeSharded(t *testing.T, dir string, shards map[string][]string, weightMap map[string]string) {
	t.Helper()
	own := map[string]string{}
	i := float32(1)
	for _, s := range slices.Sorted(maps.Keys(shards)) {
		var ts []Tensor
		for _, name := range shards[s] {
			ts = append(ts, shardTensor(t, name, i))
			i++
			own[name] = s
		}
		require.NoError(t, WriteFile(filepath.Join(dir, s), ts, map[string]string{"format": "pt", "shard": s}))
	}
	if weightMap == nil {
		weightMap = own
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 8 * len(own)}, "weight_map": weightMap})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), b, 0o644))
}

var twoShards = map[string][]string{
	"model-00001-of-00002.safetensors": {"a.weight", "b.weight"},
	"model-00002-of-00002.safetensors": {"c.weight"},
}

// A sharded checkpoint reads as one file: every tensor, in name order,
// with its values; the one-file form wins when both are there.
func TestReadCheckpointSharded(t *testing.T) {
	dir := t.TempDir()
	writeSharded(t, dir, twoShards, nil)
	f, err := ReadCheckpoint(filepath.Join(dir, "model.safetensors"))
	require.NoError(t, err)
	require.Equal(t, []string{"a.weight", "b.weight", "c.weight"}, f.Names())
	for name, want := range map[string][]float32{"a.weight": {1, -1}, "b.weight": {2, -2}, "c.weight": {3, -3}} {
		x, ok := f.Tensor(name)
		require.True(t, ok, name)
		v, err := x.Float32s()
		require.NoError(t, err)
		require.Equal(t, want, v, name)
	}
	require.Equal(t, map[string]string{"format": "pt", "shard": "model-00001-of-00002.safetensors"}, f.Metadata(), "the first shard's metadata wins")

	one := shardTensor(t, "only", 9)
	require.NoError(t, WriteFile(filepath.Join(dir, "model.safetensors"), []Tensor{one}, nil))
	f, err = ReadCheckpoint(filepath.Join(dir, "model.safetensors"))
	require.NoError(t, err)
	require.Equal(t, []string{"only"}, f.Names())

	// Neither: ReadFile's error, as before sharding.
	_, err = ReadCheckpoint(filepath.Join(t.TempDir(), "model.safetensors"))
	require.ErrorContains(t, err, "model.safetensors: no such file or directory")
}

// Every way a sharded checkpoint can be inconsistent is an error naming
// the files and tensors.
func TestReadShardedRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		shards map[string][]string
		index  map[string]string // nil: the shards' own
		raw    string            // the index's bytes, when set
		want   string
	}{
		{"missing shard", twoShards, map[string]string{"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00001-of-00002.safetensors",
			"c.weight": "model-00002-of-00002.safetensors", "d.weight": "model-00003-of-00003.safetensors"},
			"", "shard model-00003-of-00003.safetensors is missing (the index puts 1 tensors there, d.weight first)"},
		{"shards do not cover the index", twoShards, map[string]string{"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00001-of-00002.safetensors",
			"c.weight": "model-00002-of-00002.safetensors", "e.weight": "model-00002-of-00002.safetensors"},
			"", "the shards do not cover the index: model-00002-of-00002.safetensors lacks 1 of the tensors the index puts there (e.weight)"},
		{"tensor in two shards", map[string][]string{"s1.safetensors": {"a", "b"}, "s2.safetensors": {"b", "c"}},
			map[string]string{"a": "s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"},
			"", `tensor "b" is in two shards, s1.safetensors and s2.safetensors`},
		{"tensor the index does not list", twoShards, map[string]string{"a.weight": "model-00001-of-00002.safetensors", "c.weight": "model-00002-of-00002.safetensors"},
			"", `shard model-00001-of-00002.safetensors holds tensor "b.weight", which the index does not list`},
		{"tensor in another shard than the index says", twoShards, map[string]string{"a.weight": "model-00001-of-00002.safetensors",
			"b.weight": "model-00002-of-00002.safetensors", "c.weight": "model-00002-of-00002.safetensors"},
			"", `shard model-00001-of-00002.safetensors holds tensor "b.weight", which the index puts in model-00002-of-00002.safetensors`},
		{"shard outside: parent", twoShards, map[string]string{"a.weight": "../model-00001-of-00002.safetensors"},
			"", `tensor "a.weight": the index names shard "../model-00001-of-00002.safetensors", which is not a file beside the index`},
		{"shard outside: absolute", twoShards, map[string]string{"a.weight": "/etc/passwd"}, "", `the index names shard "/etc/passwd"`},
		{"shard outside: subdirectory", twoShards, map[string]string{"a.weight": "sub/x.safetensors"}, "", `the index names shard "sub/x.safetensors"`},
		{"shard outside: backslash", twoShards, map[string]string{"a.weight": `..\x.safetensors`}, "", `the index names shard "..\\x.safetensors"`},
		{"shard dot-dot", twoShards, map[string]string{"a.weight": ".."}, "", `the index names shard ".."`},
		{"shard empty", twoShards, map[string]string{"a.weight": ""}, "", `the index names shard ""`},
		{"no weight_map", twoShards, nil, `{"metadata":{}}`, "the index has no weight_map"},
		{"not JSON", twoShards, nil, `{"weight_map":`, "the index is not a checkpoint index"},
		{"weight_map of numbers", twoShards, nil, `{"weight_map":{"a":1}}`, "the index is not a checkpoint index"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSharded(t, dir, c.shards, c.index)
			idx := filepath.Join(dir, "model.safetensors.index.json")
			if c.raw != "" {
				require.NoError(t, os.WriteFile(idx, []byte(c.raw), 0o644))
			}
			_, err := ReadCheckpoint(filepath.Join(dir, "model.safetensors"))
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, "sharded checkpoint "+idx, "the error names the index")
		})
	}
}

// An index that is a device or a pipe is refused before it is read, as
// one-file checkpoints are; a damaged shard is ReadFile's error.
func TestReadShardedBounded(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "model.safetensors.index.json")
	require.NoError(t, syscall.Mkfifo(idx, 0o644))
	_, err := ReadCheckpoint(filepath.Join(dir, "model.safetensors"))
	require.ErrorContains(t, err, "the index is not a regular file")

	// A huge index (sparse: no disk) is refused after MaxIndexSize+1 bytes.
	dir = t.TempDir()
	idx = filepath.Join(dir, "model.safetensors.index.json")
	require.NoError(t, os.WriteFile(idx, []byte(`{"weight_map":{"a":"b"}}`), 0o644))
	require.NoError(t, os.Truncate(idx, 1<<40))
	_, err = ReadCheckpoint(filepath.Join(dir, "model.safetensors"))
	require.ErrorContains(t, err, "the index is larger than 64 MB")

	dir = t.TempDir()
	writeSharded(t, dir, twoShards, nil)
	shard := filepath.Join(dir, "model-00002-of-00002.safetensors")
	b, err := os.ReadFile(shard)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(shard, b[:len(b)-1], 0o644))
	_, err = ReadCheckpoint(filepath.Join(dir, "model.safetensors"))
	require.ErrorContains(t, err, shard+": header declares 8 bytes of tensor data")
}
