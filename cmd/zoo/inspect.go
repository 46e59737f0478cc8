package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/d73a19ff/zoo/internal/safetensors"
)

// runInspect prints every tensor of a safetensors file and its metadata.
func runInspect(args []string, w io.Writer) error {
	if len(args) != 1 {
		return errUsage
	}
	f, err := safetensors.ReadFile(args[0])
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
