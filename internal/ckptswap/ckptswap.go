// Package ckptswap replaces a checkpoint directory so that a kill at any
// moment leaves a complete copy (Replace, the writer train's runs use, and
// RecoverAll, which resolves what a kill left), names the directories of a
// replacement, and lets a reader of a checkpoint finish one that a kill
// interrupted (Finish).
//
// A checkpoint root/<name> is replaced by writing root/.<name>.tmp-<random>,
// renaming it to root/.<name>.new once complete, renaming the current
// <name> to root/.<name>.old, renaming .<name>.new to <name> and removing
// .<name>.old. A kill between the second and third rename leaves no <name>
// but a complete copy beside it: .<name>.new (the newer), or .<name>.old.
// Older versions of zoo moved <name> aside to .<name>.tmp-<random>.old.
package ckptswap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// The name parts of a replacement's hidden directories.
const (
	TmpInfix    = ".tmp-" // .<name>.tmp-<random>: a copy being written, possibly partial
	ReadySuffix = ".new"  // .<name>.new: the new copy, complete
	AsideSuffix = ".old"  // .<name>.old: the previous copy, complete
)

// Ready is the path of dir's complete new copy: .<name>.new beside it.
func Ready(dir string) string {
	dir = filepath.Clean(dir) // "best/" is best
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+ReadySuffix)
}

// Aside is the path of dir's previous copy: .<name>.old beside it.
func Aside(dir string) string {
	dir = filepath.Clean(dir)
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+AsideSuffix)
}

// CompleteCopy returns the complete copy that an interrupted replacement
// left beside the checkpoint directory dir, the one that recovery puts in
// place: .<name>.new, else .<name>.old, else the last legacy
// .<name>.tmp-*.old. It is false when dir exists or no copy is there. It
// only reads the directory.
func CompleteCopy(dir string) (string, bool) {
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	for _, p := range []string{Ready(dir), Aside(dir)} {
		if isDir(p) {
			return p, true
		}
	}
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		return "", false
	}
	prefix := "." + filepath.Base(dir) + TmpInfix
	var legacy []string
	for _, e := range entries {
		if n := e.Name(); e.IsDir() && strings.HasPrefix(n, prefix) && strings.HasSuffix(n, AsideSuffix) {
			legacy = append(legacy, n)
		}
	}
	if len(legacy) == 0 {
		return "", false
	}
	sort.Strings(legacy)
	return filepath.Join(filepath.Dir(dir), legacy[len(legacy)-1]), true
}

func isDir(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.IsDir()
}

// Finish puts back the checkpoint directory dir when an interrupted
// replacement left it missing, by renaming its complete copy (CompleteCopy)
// to dir: one rename, the step that recovery would take first. It removes
// nothing (the stale copies are the writer's to clean up), so a reader may
// run it beside a live writer: a writer whose own rename finds the work
// done goes on. It returns nil when dir exists afterwards, whoever made it;
// an error that names the complete copy when the rename fails (a read-only
// run directory, say); fs.ErrNotExist when dir is missing with no copy.
func Finish(dir string) error {
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	cp, ok := CompleteCopy(dir)
	if !ok {
		if _, err := os.Lstat(dir); err == nil {
			return nil
		}
		return fs.ErrNotExist
	}
	err := rename(cp, dir)
	if err == nil {
		atomicfile.SyncDir(filepath.Dir(dir))
		return nil
	}
	if _, serr := os.Lstat(dir); serr == nil {
		return nil // another process put it back first
	}
	return fmt.Errorf("checkpoint %s is missing: a save of it was interrupted, and putting back its complete copy %s failed (%w); read that directory instead, or run a zoo command that can write to %s (a training run's --resume finishes the save)",
		dir, cp, err, filepath.Dir(dir))
}

// rename is os.Rename; a test makes it fail as read-only storage would
// (the tests run as root, whom permissions do not stop).
var rename = os.Rename
