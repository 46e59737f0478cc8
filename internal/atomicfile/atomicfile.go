// Package atomicfile writes files atomically: the content goes to a
// temporary file in the destination directory, which is synced and then
// renamed over the destination, so readers see either the old file or the
// complete new one, never a partial write.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// defaultPerm is the permission given to a newly created file. When the
// destination already exists its permission bits are kept instead.
const defaultPerm fs.FileMode = 0o644

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
	perm := defaultPerm
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		perm = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
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
	if err := f.Chmod(perm); err != nil {
		return err
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
	syncDir(dir)
	return nil
}

// syncDir fsyncs a directory so a rename inside it is durable. Failures are
// ignored: some platforms (Windows, some file systems) cannot sync a
// directory, and the rename itself has already succeeded.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
