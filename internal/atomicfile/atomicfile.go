// Package atomicfile writes files atomically: the content goes to a
// temporary file in the destination directory, which is synced and then
// renamed over the destination, so readers see either the old file or the
// complete new one, never a partial write.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// A new file is created with mode 0666 and a new directory with 0777, less
// the process's umask, as os.Create and os.Mkdir make them, so that a run
// directory is as readable to other users and service accounts as the
// user's umask says (os.CreateTemp and os.MkdirTemp would make them
// private: 0600 and 0700). When the destination file already exists its
// permission bits are kept instead.
const (
	filePerm fs.FileMode = 0o666
	dirPerm  fs.FileMode = 0o777
)

// MkdirTemp creates a new directory in dir whose name is prefix followed by
// a random string, with mode 0777 less the umask (os.MkdirTemp's is 0700),
// and returns its path.
func MkdirTemp(dir, prefix string) (string, error) {
	for range 10000 {
		p := filepath.Join(dir, prefix+randomSuffix())
		err := os.Mkdir(p, dirPerm)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("atomicfile: no free name for %s in %s", prefix+"*", dir)
}

// createTemp creates a new file in dir named prefix and a random string,
// with mode perm less the umask.
func createTemp(dir, prefix string, perm fs.FileMode) (*os.File, error) {
	for range 10000 {
		f, err := os.OpenFile(filepath.Join(dir, prefix+randomSuffix()), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("atomicfile: no free name for %s in %s", prefix+"*", dir)
}

func randomSuffix() string { return strconv.FormatUint(uint64(rand.Uint32()), 10) }

// WriteFile atomically replaces the file at path with whatever write
// produces. write receives a buffered writer on a temporary file created in
// the same directory; after it returns nil the buffer is flushed, the file
// is fsynced, closed and renamed over path, and the directory is fsynced
// (errors from the directory sync are ignored, since some platforms do not
// support it). On any error, including one returned by write, the temporary
// file is removed and an existing file at path is left untouched. Errors are
// wrapped with the path.
func WriteFile(path string, write func(w io.Writer) error) error {
	if err := writeFile(path, write); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	return nil
}

// WriteBytes atomically replaces the file at path with b, like WriteFile.
func WriteBytes(path string, b []byte) error {
	return WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

func writeFile(path string, write func(w io.Writer) error) error {
	dir, base := filepath.Dir(path), filepath.Base(path)
	keep := fs.FileMode(0) // an existing file's permission, kept; 0: none
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		keep = fi.Mode().Perm()
	}
	f, err := createTemp(dir, "."+base+".tmp-", filePerm)
	if err != nil {
		return err
	}
	tmp := f.Name()
	closed, done := false, false
	// The deferred cleanup also runs if write panics.
	defer func() {
		if done {
			return
		}
		if !closed {
			_ = f.Close()
		}
		_ = os.Remove(tmp)
	}()

	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if keep != 0 {
		if err := f.Chmod(keep); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	done = true
	SyncDir(dir)
	return nil
}

// SyncDir fsyncs a directory so a rename inside it is durable. Failures are
// ignored: some platforms (Windows, some file systems) cannot sync a
// directory, and the rename itself has already succeeded.
func SyncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
