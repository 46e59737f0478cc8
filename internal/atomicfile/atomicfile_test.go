package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tempFiles lists leftover temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFile(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		old     *string // nil: no existing file
		write   func(w io.Writer) error
		wantErr error
		want    string // expected content afterwards ("" and no old: file absent)
	}{
		{
			name:  "creates new file",
			write: func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err },
			want:  "new",
		},
		{
			name:  "replaces existing file",
			old:   ptr("old content"),
			write: func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err },
			want:  "new",
		},
		{
			name: "failing callback keeps old file",
			old:  ptr("old content"),
			write: func(w io.Writer) error {
				_, _ = io.WriteString(w, strings.Repeat("partial", 10000))
				return errBoom
			},
			wantErr: errBoom,
			want:    "old content",
		},
		{
			name:    "failing callback creates nothing",
			write:   func(w io.Writer) error { return errBoom },
			wantErr: errBoom,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.bin")
			if tt.old != nil {
				require.NoError(t, os.WriteFile(path, []byte(*tt.old), 0o600))
			}
			err := WriteFile(path, tt.write)
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Contains(t, err.Error(), path)
			} else {
				require.NoError(t, err)
			}
			got, readErr := os.ReadFile(path)
			if tt.old == nil && tt.wantErr != nil {
				assert.ErrorIs(t, readErr, os.ErrNotExist)
			} else {
				require.NoError(t, readErr)
				assert.Equal(t, tt.want, string(got))
			}
			assert.Empty(t, tempFiles(t, dir))
		})
	}
}

func TestWriteFileKeepsPermissions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o640))
	require.NoError(t, os.Chmod(path, 0o640)) // defeat umask
	require.NoError(t, WriteBytes(path, []byte("y")))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	if os.PathSeparator == '/' {
		assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	}
}

func TestWriteBytes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b")
	require.NoError(t, WriteBytes(path, []byte("hello")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	assert.Empty(t, tempFiles(t, dir))
}

func TestWriteFileMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	err := WriteBytes(path, []byte("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "atomicfile: write "+path)
}

func TestWriteFilePanicCleansUp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	func() {
		defer func() { _ = recover() }()
		_ = WriteFile(path, func(w io.Writer) error { panic("callback panic") })
	}()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got))
	assert.Empty(t, tempFiles(t, dir))
}

func ptr(s string) *string { return &s }
