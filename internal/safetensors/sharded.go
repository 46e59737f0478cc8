package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/internal/memcheck"
)

// IndexSuffix ends the name of a sharded checkpoint's index, which
// Hugging Face's save_pretrained writes beside its shards in place of the
// one file: model.safetensors.index.json for model.safetensors.
const IndexSuffix = ".index.json"

// MaxIndexSize bounds an index file read: a real one lists a few
// thousand tensors in a few hundred kilobytes.
const MaxIndexSize = 64 << 20

// index is a sharded checkpoint's index file, as transformers writes it:
// {"metadata": {"total_size": …}, "weight_map": {tensor: shard file}}.
// Other keys, and metadata's contents, are not read.
type index struct {
	WeightMap map[string]string `json:"weight_map"`
}

// ReadCheckpoint reads the checkpoint whose one-file form is path
// (dir/model.safetensors): that file when it exists, or else, when
// path+IndexSuffix does, the shards it names, as one File (see
// ReadSharded). When neither exists the error is ReadFile's for path.
func ReadCheckpoint(path string) (*File, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(path + IndexSuffix); err == nil {
			return ReadSharded(path + IndexSuffix)
		}
	}
	return ReadFile(path)
}

// ReadSharded reads a sharded checkpoint: the index file at indexPath
// (model.safetensors.index.json), whose weight_map names the shard file,
// in the index's directory, of each tensor; then those shards, each read
// as ReadFile reads one file. The result is one File holding every tensor
// (in name order), with the union of the shards' metadata (the first
// shard in name order wins a key they disagree on).
//
// It refuses, naming the files and tensors: an index that is not a
// regular file of at most MaxIndexSize bytes, or not JSON with a
// non-empty weight_map; a shard name that is not a plain file name beside
// the index (absolute, with a directory, "." or ".."); a missing shard; a
// tensor in two shards; a tensor in a shard the index does not map to it;
// an index tensor its shard does not hold (the shards do not cover the
// index); and shards whose total size would not fit in available memory,
// before any is read.
func ReadSharded(indexPath string) (*File, error) {
	f, err := readSharded(indexPath, ReadFile, true)
	if err != nil {
		return nil, fmt.Errorf("safetensors: sharded checkpoint %s: %w", indexPath, err)
	}
	return f, nil
}

// readSharded reads the index and each shard through open (ReadFile or
// OpenFile), checking the shards' total size against available memory
// when checkMem. On an error the shards opened so far are closed.
func readSharded(indexPath string, open func(string) (*File, error), checkMem bool) (_ *File, err error) {
	idx, err := readIndex(indexPath)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(indexPath)
	byShard := map[string][]string{} // shard -> its tensors per the index, sorted
	for _, name := range slices.Sorted(maps.Keys(idx.WeightMap)) {
		shard := idx.WeightMap[name]
		if err := checkShardName(shard); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		byShard[shard] = append(byShard[shard], name)
	}
	shards := slices.Sorted(maps.Keys(byShard))
	var total int64
	for _, s := range shards {
		fi, err := os.Stat(filepath.Join(dir, s))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("shard %s is missing (the index puts %d tensors there, %s first): download it beside the index", s, len(byShard[s]), byShard[s][0])
		}
		if err != nil {
			return nil, err
		}
		total = memcheck.Sum(total, fi.Size())
	}
	if checkMem {
		if err := memcheck.CheckMemory(total, fmt.Sprintf("its %d shards", len(shards)), "use a machine with more memory"); err != nil {
			return nil, err
		}
	}
	out := &File{tensors: map[string]Tensor{}}
	defer func() {
		if err != nil {
			out.Close()
		}
	}()
	where := map[string]string{} // tensor -> the shard holding it
	for _, s := range shards {
		f, err := open(filepath.Join(dir, s))
		if err != nil {
			return nil, err
		}
		out.files = append(out.files, f.files...)
		if f.at != nil && out.at == nil {
			out.at = map[string]span{}
		}
		for _, name := range f.names {
			if other, ok := where[name]; ok {
				return nil, fmt.Errorf("tensor %q is in two shards, %s and %s: the checkpoint is inconsistent", name, other, s)
			}
			if want := idx.WeightMap[name]; want != s {
				if want == "" {
					return nil, fmt.Errorf("shard %s holds tensor %q, which the index does not list: the index does not describe these shards", s, name)
				}
				return nil, fmt.Errorf("shard %s holds tensor %q, which the index puts in %s: the index does not describe these shards", s, name, want)
			}
			where[name] = s
			out.tensors[name] = f.tensors[name]
			if sp, ok := f.at[name]; ok {
				out.at[name] = sp
			}
		}
		for k, v := range f.metadata {
			if _, ok := out.metadata[k]; !ok {
				if out.metadata == nil {
					out.metadata = map[string]string{}
				}
				out.metadata[k] = v
			}
		}
	}
	for _, s := range shards {
		var lacking []string
		for _, name := range byShard[s] {
			if _, ok := where[name]; !ok {
				lacking = append(lacking, name)
			}
		}
		if len(lacking) > 0 {
			return nil, fmt.Errorf("the shards do not cover the index: %s lacks %d of the tensors the index puts there (%s): the shard is another version of the checkpoint, or damaged",
				s, len(lacking), short(lacking))
		}
	}
	out.names = slices.Sorted(maps.Keys(out.tensors))
	return out, nil
}

// readIndex reads and checks the index file, at most MaxIndexSize bytes.
func readIndex(path string) (*index, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the index is not a regular file (mode %s)", fi.Mode())
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxIndexSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxIndexSize {
		return nil, fmt.Errorf("the index is larger than %d MB: not a checkpoint index", MaxIndexSize>>20)
	}
	var idx index
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("the index is not a checkpoint index: %w", err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, errors.New("the index has no weight_map naming each tensor's shard")
	}
	return &idx, nil
}

// checkShardName refuses a shard name that is not a plain file name in
// the index's directory.
func checkShardName(s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) || filepath.IsAbs(s) || filepath.Base(s) != s || filepath.VolumeName(s) != "" {
		return fmt.Errorf("the index names shard %q, which is not a file beside the index: a shard's name has no directory", s)
	}
	return nil
}

// short lists the first few names for a message.
func short(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
}
