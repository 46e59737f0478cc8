package datasets

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadTokenizerRefusesDevices checks that a tokenizer.json linked to
// /dev/zero (size 0, never ends) or a FIFO is refused, not read until the
// process runs out of memory or blocks.
func TestLoadTokenizerRefusesDevices(t *testing.T) {
	dir := t.TempDir()
	t.Run("dev zero", func(t *testing.T) {
		if _, err := os.Stat("/dev/zero"); err != nil {
			t.Skip("no /dev/zero")
		}
		path := filepath.Join(dir, "zero.json")
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Skipf("cannot make symlinks: %v", err)
		}
		_, err := LoadTokenizer(path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "load tokenizer: "+path+": not a regular file")
	})
	t.Run("fifo", func(t *testing.T) {
		path := filepath.Join(dir, "fifo.json")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skipf("cannot make a FIFO: %v", err)
		}
		_, err := LoadTokenizer(path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "load tokenizer: "+path+": not a regular file")
	})
}

// TestLoadTokenizerTooLarge checks the size bound on a sparse file just
// over it, which takes no disk space.
func TestLoadTokenizerTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(maxTokenizerBytes+1))
	require.NoError(t, f.Close())
	_, err = LoadTokenizer(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1073741825 bytes is more than the 1073741824-byte limit")
}
