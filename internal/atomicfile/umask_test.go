//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// New files and MkdirTemp's directories get 0666 and 0777 less the umask,
// as os.Create and os.Mkdir give; an existing file keeps its permission.
func TestNewFilesFollowTheUmask(t *testing.T) {
	for _, c := range []struct {
		umask     int
		file, dir fs.FileMode
	}{{0o022, 0o644, 0o755}, {0o077, 0o600, 0o700}, {0o002, 0o664, 0o775}} {
		dir := t.TempDir()
		old := syscall.Umask(c.umask)
		errW := WriteBytes(filepath.Join(dir, "f"), []byte("x"))
		sub, errD := MkdirTemp(dir, ".d.tmp-")
		syscall.Umask(old)
		if errW != nil || errD != nil {
			t.Fatal(errW, errD)
		}
		for p, want := range map[string]fs.FileMode{filepath.Join(dir, "f"): c.file, sub: c.dir} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("umask %03o: %s has mode %v, want %v", c.umask, filepath.Base(p), fi.Mode().Perm(), want)
			}
		}
	}
}
