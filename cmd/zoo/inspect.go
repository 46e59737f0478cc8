package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/models"
	_ "github.com/d73a19ff/zoo/models/llama" // registers llama, qwen2 and mistral, which have no commands yet
)

// runInspect describes a checkpoint directory (its family from config.json's
// model_type, its sizes and files) or lists a safetensors file's tensors.
func runInspect(args []string, w io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(w, "usage: zoo inspect DIR|FILE.safetensors\n\nA checkpoint directory: its family (from config.json's model_type), sizes, tokenizer and training state, then its tensors. A .safetensors file (or a sharded checkpoint's model.safetensors.index.json): every tensor's name, dtype and shape, and the metadata.")
		return nil
	}
	if len(args) != 1 {
		return fmt.Errorf("%w: give one checkpoint directory or .safetensors file", errUsage)
	}
	path := args[0]
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return inspectDir(path, w)
	}
	return inspectFile(path, w)
}

func inspectDir(dir string, w io.Writer) error {
	ckpt, err := models.Open(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "checkpoint %s\nfamily     %s (model_type %s)\n", dir, ckpt.Family.Name, ckpt.ModelType)
	if len(ckpt.Architectures) > 0 {
		fmt.Fprintf(w, "class      %v\n", ckpt.Architectures)
	}
	if ckpt.Family.Describe != nil {
		d, err := ckpt.Family.Describe(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "model      %s\n", d)
	}
	if ckpt.Has(models.TokenizerFile) {
		tok, err := ckpt.Tokenizer()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "tokenizer  %s, %d tokens\n", models.TokenizerFile, tok.VocabSize())
	}
	if ckpt.Has(models.PreprocessorFile) {
		fmt.Fprintf(w, "images     %s\n", models.PreprocessorFile)
	}
	if ckpt.Has(models.TrainerFile) && ckpt.Has(models.OptimizerFile) {
		fmt.Fprintf(w, "training   %s and %s: a run can resume from here\n", models.TrainerFile, models.OptimizerFile)
	}
	return inspectFile(filepath.Join(dir, models.WeightsFile), w)
}

// inspectFile lists a safetensors file's tensors: path itself, a sharded
// checkpoint's index (model.safetensors.index.json), or the one-file name
// of a sharded checkpoint (model.safetensors beside its index).
func inspectFile(path string, w io.Writer) error {
	read := safetensors.ReadCheckpoint
	if strings.HasSuffix(path, safetensors.IndexSuffix) {
		read = safetensors.ReadSharded
	}
	f, err := read(path)
	if err != nil {
		return err
	}
	total := 0
	for _, name := range f.Names() {
		t, _ := f.Tensor(name)
		total += t.NumElements()
		fmt.Fprintf(w, "%-60s %-5s %v\n", name, t.DType, t.Shape)
	}
	md := f.Metadata()
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "metadata %s = %s\n", k, md[k])
	}
	_, err = fmt.Fprintf(w, "%d tensors, %d values\n", len(f.Names()), total)
	return err
}
