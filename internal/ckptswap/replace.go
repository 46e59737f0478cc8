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

// A checkpoint <name> (best, final, step-000100) is replaced in steps that
// leave, at every moment, one complete copy on disk that recovery finds:
//
//  1. the new checkpoint is written into .<name>.tmp-<random>, and every file
//     and directory in it is fsynced;
//  2. it is renamed to .<name>.new: from here on it is known to be complete;
//  3. the current <name>, if there is one, is renamed to .<name>.old;
//  4. .<name>.new is renamed to <name>;
//  5. .<name>.old is removed.
//
// The checkpoints directory is fsynced after every rename. <name> itself is
// only ever made by renaming a complete directory, so whenever it exists it
// is whole. A kill leaves one of these states, which RecoverAll (run by
// train's New, Latest, Recover and PrepareRunDir) resolves:
//
//	left on disk                 recovery
//	.<name>.tmp-*                removed: unfinished, possibly partial
//	<name>, .<name>.new          roll forward: steps 3 to 5
//	.<name>.old, .<name>.new     roll forward: steps 4 and 5
//	<name>, .<name>.old          step 5
//	.<name>.old alone            roll back: renamed to <name>
//
// Older versions of zoo moved <name> aside to .<name>.tmp-<random>.old; such
// a directory is complete and recovered like .<name>.old.
//
// A reader of a checkpoint (models' bundle loading, every family's loader)
// finding <name> missing puts its complete copy back with one rename and
// removes nothing (Finish); a writer whose own rename finds that done goes
// on.
//
// The writer's half lives here, beside the reader's, so that a test of
// every family's reader against the writer (pretrain's swap_readers_test.go)
// needs neither train nor the families to import the other.

// renameDone reports whether the rename of from to to that just failed
// was made by another process: from is gone and to is there (a reader
// finished the swap, see Finish).
func renameDone(from, to string) bool {
	_, errFrom := os.Lstat(from)
	_, errTo := os.Lstat(to)
	return errors.Is(errFrom, fs.ErrNotExist) && errTo == nil
}

// crashHook, when a test sets it (SetCrashHook), is called before each file
// operation of a checkpoint replacement (and of train's writing of one)
// with the operation's name. An error stops the replacement on the spot
// and leaves the files as a kill there would: no clean-up runs.
var crashHook func(op string) error

// SetCrashHook sets the hook that tests use to kill a replacement before
// one of its file operations (nil: none): CrashPoint(op) calls it, and an
// error from it stops the replacement as a kill would, wrapped in
// ErrCrashed. It is not safe to call while a replacement runs.
func SetCrashHook(f func(op string) error) { crashHook = f }

// ErrCrashed marks an error from the crash hook (SetCrashHook).
var ErrCrashed = errors.New("crash injected by a test")

// CrashPoint calls the crash hook, if a test set one, before the file
// operation op; it returns the hook's error wrapped in ErrCrashed.
func CrashPoint(op string) error {
	if crashHook == nil {
		return nil
	}
	if err := crashHook(op); err != nil {
		return fmt.Errorf("%w before %s: %w", ErrCrashed, op, err)
	}
	return nil
}

// Replace makes root/name a complete new directory filled by write, in the
// steps above, and returns its path. It first recovers what an earlier
// replacement of root/name left.
func Replace(root, name string, write func(dir string) error) (string, error) {
	final := filepath.Join(root, name)
	ready := filepath.Join(root, "."+name+ReadySuffix)
	aside := filepath.Join(root, "."+name+AsideSuffix)
	if err := recoverOne(root, name); err != nil {
		return "", err
	}
	if err := CrashPoint("create temp"); err != nil {
		return "", err
	}
	tmp, err := atomicfile.MkdirTemp(root, "."+name+TmpInfix) // 0777 less the umask, as the files in it
	if err != nil {
		return "", err
	}
	err = write(tmp)
	if err == nil {
		if err = CrashPoint("sync"); err == nil {
			err = syncTree(tmp)
		}
	}
	if err == nil {
		if err = CrashPoint("mark complete"); err == nil {
			err = os.Rename(tmp, ready)
		}
	}
	if err != nil {
		if !errors.Is(err, ErrCrashed) {
			os.RemoveAll(tmp)
		}
		return "", err
	}
	atomicfile.SyncDir(root)
	// From here on a complete copy is on disk whatever happens: a failed step
	// leaves a state that recoverCheckpoint finishes (the next checkpoint of
	// this name starts with it).
	switch _, err := os.Lstat(final); {
	case err == nil:
		if err := CrashPoint("move old aside"); err != nil {
			return "", err
		}
		if err := os.Rename(final, aside); err != nil {
			return "", err
		}
		atomicfile.SyncDir(root)
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	if err := CrashPoint("move new in"); err != nil {
		return "", err
	}
	if err := os.Rename(ready, final); err != nil && !renameDone(ready, final) {
		return "", err
	}
	atomicfile.SyncDir(root)
	if err := CrashPoint("remove old"); err != nil {
		return "", err
	}
	if err := os.RemoveAll(aside); err != nil {
		return "", err
	}
	atomicfile.SyncDir(root)
	return final, nil
}

// RecoverAll recovers every checkpoint of the checkpoints directory root
// that a replacement left unfinished, as the table above says: it must not
// run while another process writes checkpoints into root. A missing root
// is nothing to recover.
func RecoverAll(root string) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var names []string
	for _, e := range entries {
		if name, ok := swapName(e.Name()); ok && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if err := recoverOne(root, name); err != nil {
			return err
		}
	}
	return nil
}

// swapName returns the checkpoint that a hidden entry of the checkpoints
// directory (.best.tmp-123, .best.new, .best.old, .best.tmp-123.old)
// belongs to.
func swapName(entry string) (string, bool) {
	rest, ok := strings.CutPrefix(entry, ".")
	if !ok {
		return "", false
	}
	if name, _, ok := strings.Cut(rest, TmpInfix); ok {
		return name, name != ""
	}
	for _, suffix := range []string{ReadySuffix, AsideSuffix} {
		if name, ok := strings.CutSuffix(rest, suffix); ok {
			return name, name != ""
		}
	}
	return "", false
}

// recoverOne resolves the state a replacement of root/name left, as
// the table above says.
func recoverOne(root, name string) error {
	final := filepath.Join(root, name)
	ready := filepath.Join(root, "."+name+ReadySuffix)
	aside := filepath.Join(root, "."+name+AsideSuffix)
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var temps, legacy []string // unfinished writes; complete old copies of older versions
	hasFinal, hasReady, hasAside := false, false, false
	for _, e := range entries {
		switch n := e.Name(); {
		case n == name:
			hasFinal = true
		case n == filepath.Base(ready):
			hasReady = true
		case n == filepath.Base(aside):
			hasAside = true
		case strings.HasPrefix(n, "."+name+TmpInfix) && strings.HasSuffix(n, AsideSuffix):
			legacy = append(legacy, filepath.Join(root, n))
		case strings.HasPrefix(n, "."+name+TmpInfix):
			temps = append(temps, filepath.Join(root, n))
		}
	}
	if !hasReady && !hasAside && len(temps) == 0 && len(legacy) == 0 {
		return nil // nothing to do: a read-only run directory stays untouched
	}
	rename := func(from, to string) error {
		if err := os.Rename(from, to); err != nil && !renameDone(from, to) {
			return fmt.Errorf("checkpoint %s: %w", name, err)
		}
		atomicfile.SyncDir(root)
		return nil
	}
	if hasReady { // roll forward: the new copy is complete
		if hasFinal {
			if hasAside { // not a state the steps leave; <name> is complete, so the aside copy is surplus
				if err := os.RemoveAll(aside); err != nil {
					return fmt.Errorf("checkpoint %s: %w", name, err)
				}
			}
			if err := rename(final, aside); err != nil {
				return err
			}
			hasAside = true
		}
		if err := rename(ready, final); err != nil {
			return err
		}
		hasFinal = true
	}
	if !hasFinal { // roll back to the old copy
		switch {
		case hasAside:
			if err := rename(aside, final); err != nil {
				return err
			}
			hasAside = false
		case len(legacy) > 0:
			sort.Strings(legacy)
			if err := rename(legacy[len(legacy)-1], final); err != nil {
				return err
			}
			legacy = legacy[:len(legacy)-1]
		}
	}
	var stale []string
	if hasAside {
		stale = append(stale, aside)
	}
	for _, dir := range append(append(stale, legacy...), temps...) {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("checkpoint %s: removing %s: %w", name, filepath.Base(dir), err)
		}
	}
	atomicfile.SyncDir(root)
	return nil
}

// syncTree fsyncs every file under dir, then every directory, deepest
// first, so that the whole tree is on disk before it is renamed into place.
func syncTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type().IsRegular():
			return syncFile(p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		atomicfile.SyncDir(dirs[i])
	}
	return nil
}

func syncFile(path string) error {
	// Opened for writing: Windows cannot flush a file opened read-only.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
