package safetensors

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadFileRefusesDevices checks that a model.safetensors linked to
// /dev/zero, which reports size 0 and never ends, is refused instead of
// read until the process runs out of memory.
func TestReadFileRefusesDevices(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Skipf("cannot make symlinks: %v", err)
	}
	_, err := ReadFile(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+": not a regular file")
}

// TestReadFileRefusesPipe checks that a FIFO is refused without opening
// it (opening one for reading blocks until a writer appears).
func TestReadFileRefusesPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	_, err := ReadFile(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+": not a regular file")
}

// TestReadFileSizeMismatch checks that a file whose header declares more
// (or less) data than the file holds is reported as such, naming both
// sizes, before the data is read.
func TestReadFileSizeMismatch(t *testing.T) {
	header := `{` + ent("a", "U8", "[1099511627776]", "[0,1099511627776]") + `}` // 1 TiB declared
	tests := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"truncated", rawFile(header, false, make([]byte, 16)), "header declares 1099511627776 bytes of tensor data but the "},
		{"padded", rawFile(`{`+ent("a", "F32", "[1]", "[0,4]")+`}`, false, make([]byte, 12)), "header declares 4 bytes of tensor data but the "},
		{"header beyond file", rawFileLen(1_000_000, []byte("{}"), nil), "header length 1000000 is beyond the end of the 10-byte file"},
		{"huge header", rawFileLen(MaxHeaderSize+1, []byte("{}"), nil), "exceeds the 100000000-byte limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "model.safetensors")
			require.NoError(t, os.WriteFile(path, tc.data, 0o600))
			_, err := ReadFile(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "safetensors: "+path+": "), err.Error())
		})
	}
}
