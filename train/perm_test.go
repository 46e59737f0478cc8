//go:build unix

package train

import (
	"context"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Checkpoint directories and their files follow the umask, as os.Mkdir and
// os.Create do (issue 34: the directories were 0700, from os.MkdirTemp,
// while their files were 0644, so another user or a service account could
// not read a checkpoint).
func TestCheckpointPermissionsFollowTheUmask(t *testing.T) {
	for _, c := range []struct {
		umask     int
		dir, file fs.FileMode
	}{{0o022, 0o755, 0o644}, {0o027, 0o750, 0o640}, {0o002, 0o775, 0o664}} {
		old := syscall.Umask(c.umask)
		dir := t.TempDir()
		tr, err := New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
		require.NoError(t, err)
		_, _, err = tr.trainStep(context.Background())
		require.NoError(t, err)
		ckpt, err := tr.checkpoint("best")
		require.NoError(t, err)
		_, err = tr.checkpoint("best") // a replacement, over the first
		require.NoError(t, err)
		tr.Close()
		syscall.Umask(old)

		require.NoError(t, filepath.WalkDir(ckpt, func(p string, d fs.DirEntry, err error) error {
			require.NoError(t, err)
			fi, err := d.Info()
			require.NoError(t, err)
			want := c.file
			if d.IsDir() {
				want = c.dir
			}
			require.Equal(t, want, fi.Mode().Perm(), "umask %03o: %s", c.umask, p)
			return nil
		}))
	}
}
