package ckptswap_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/internal/ckptswap"
)

// A save of run/best was killed between its renames: best is missing, and
// its complete new copy, .best.new, is beside it. Finish puts that copy
// back as best with one rename, removing nothing (.best.old is the
// writer's to clean up); a reader can then read best. A checkpoint
// that is missing with no copy beside it is fs.ErrNotExist.
func ExampleFinish() {
	run, err := os.MkdirTemp("", "ckptswap-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(run)
	best := filepath.Join(run, "best")
	if err := os.Mkdir(ckptswap.Ready(best), 0o755); err != nil {
		fmt.Println(err)
		return
	}
	if err := os.WriteFile(filepath.Join(ckptswap.Ready(best), "config.json"), []byte("{}\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	if err := os.Mkdir(ckptswap.Aside(best), 0o755); err != nil { // the older copy, not yet removed
		fmt.Println(err)
		return
	}
	cp, ok := ckptswap.CompleteCopy(best)
	fmt.Println("complete copy:", filepath.Base(cp), ok)

	if err := ckptswap.Finish(best); err != nil {
		fmt.Println(err)
		return
	}
	entries, err := os.ReadDir(run)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	_, err = os.Stat(filepath.Join(best, "config.json"))
	fmt.Println("best/config.json readable:", err == nil)
	fmt.Println("again:", ckptswap.Finish(best)) // best exists: nothing to do

	err = ckptswap.Finish(filepath.Join(run, "last"))
	fmt.Println("no copy:", errors.Is(err, fs.ErrNotExist))
	// Output:
	// complete copy: .best.new true
	// .best.old
	// best
	// best/config.json readable: true
	// again: <nil>
	// no copy: true
}
