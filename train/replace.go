package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/ckptswap"
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
// is whole. A kill leaves one of these states, which recoverCheckpoints (run
// by New, Latest, Recover and PrepareRunDir) resolves:
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
// removes nothing (ckptswap.Finish); a writer whose own rename finds that
// done goes on.
const (
	tmpInfix    = ckptswap.TmpInfix
	readySuffix = ckptswap.ReadySuffix
	asideSuffix = ckptswap.AsideSuffix
)

// renameDone reports whether the rename of from to to that just failed
// was made by another process: from is gone and to is there (a reader
// finished the swap, see ckptswap.Finish).
func renameDone(from, to string) bool {
	_, errFrom := os.Lstat(from)
	_, errTo := os.Lstat(to)
	return errors.Is(errFrom, fs.ErrNotExist) && errTo == nil
}

// crashHook, when a test sets it, is called before each file operation of a
// checkpoint replacement with the operation's name. An error stops the
// replacement on the spot and leaves the files as a kill there would: no
// clean-up runs.
var crashHook func(op string) error

// errCrashed marks an error from crashHook.
var errCrashed = errors.New("crash injected by a test")

func crashPoint(op string) error {
	if crashHook == nil {
		return nil
	}
	if err := crashHook(op); err != nil {
		return fmt.Errorf("%w before %s: %w", errCrashed, op, err)
	}
	return nil
}

// replaceDir makes root/name a complete new directory filled by write, in
// the steps above, and returns its path.
func replaceDir(root, name string, write func(dir string) error) (string, error) {
	final := filepath.Join(root, name)
	ready := filepath.Join(root, "."+name+readySuffix)
	aside := filepath.Join(root, "."+name+asideSuffix)
	if err := recoverCheckpoint(root, name); err != nil {
		return "", err
	}
	if err := crashPoint("create temp"); err != nil {
		return "", err
	}
	tmp, err := atomicfile.MkdirTemp(root, "."+name+tmpInfix) // 0777 less the umask, as the files in it
	if err != nil {
		return "", err
	}
	err = write(tmp)
	if err == nil {
		if err = crashPoint("sync"); err == nil {
			err = syncTree(tmp)
		}
	}
	if err == nil {
		if err = crashPoint("mark complete"); err == nil {
			err = os.Rename(tmp, ready)
		}
	}
	if err != nil {
		if !errors.Is(err, errCrashed) {
			os.RemoveAll(tmp)
		}
		return "", err
	}
	syncDir(root)
	// From here on a complete copy is on disk whatever happens: a failed step
	// leaves a state that recoverCheckpoint finishes (the next checkpoint of
	// this name starts with it).
	switch _, err := os.Lstat(final); {
	case err == nil:
		if err := crashPoint("move old aside"); err != nil {
			return "", err
		}
		if err := os.Rename(final, aside); err != nil {
			return "", err
		}
		syncDir(root)
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	if err := crashPoint("move new in"); err != nil {
		return "", err
	}
	if err := os.Rename(ready, final); err != nil && !renameDone(ready, final) {
		return "", err
	}
	syncDir(root)
	if err := crashPoint("remove old"); err != nil {
		return "", err
	}
	if err := os.RemoveAll(aside); err != nil {
		return "", err
	}
	syncDir(root)
	return final, nil
}

// Recover brings the checkpoints of a run directory to a consistent state
// after a kill: it finishes or rolls back a half-done replacement, so that
// every checkpoint that was complete is there under its name, and removes
// the temporary directories of unfinished writes. It must not run while
// another process writes checkpoints into the same run directory. New and
// Latest recover; call Recover before reading a checkpoint of a run that
// may have been killed by any other way.
func Recover(run string) error {
	if err := recoverCheckpoints(filepath.Join(run, CheckpointsDir)); err != nil {
		return fmt.Errorf("train: recovering the checkpoints of %s: %w", run, err)
	}
	return nil
}

// recoverCheckpoints recovers every checkpoint of a checkpoints directory
// that a replacement left unfinished.
func recoverCheckpoints(root string) error {
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
		if err := recoverCheckpoint(root, name); err != nil {
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
	if name, _, ok := strings.Cut(rest, tmpInfix); ok {
		return name, name != ""
	}
	for _, suffix := range []string{readySuffix, asideSuffix} {
		if name, ok := strings.CutSuffix(rest, suffix); ok {
			return name, name != ""
		}
	}
	return "", false
}

// recoverCheckpoint resolves the state a replacement of root/name left, as
// the table above says.
func recoverCheckpoint(root, name string) error {
	final := filepath.Join(root, name)
	ready := filepath.Join(root, "."+name+readySuffix)
	aside := filepath.Join(root, "."+name+asideSuffix)
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
		case strings.HasPrefix(n, "."+name+tmpInfix) && strings.HasSuffix(n, asideSuffix):
			legacy = append(legacy, filepath.Join(root, n))
		case strings.HasPrefix(n, "."+name+tmpInfix):
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
		syncDir(root)
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
	syncDir(root)
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
		syncDir(dirs[i])
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

// syncDir fsyncs a directory so that the entries made or renamed in it are
// durable. Failures are ignored, as internal/atomicfile does: some
// platforms (Windows, some file systems) cannot sync a directory, and the
// operation it makes durable has already succeeded.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
