package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// ZOO_CPUPROFILE=FILE writes a CPU profile of the whole command (gzipped
// protobuf, as go tool pprof reads), atomically; a path that cannot be
// written is an error before the command runs, and the exit code is the
// command's.
func TestCPUProfileEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.prof")
	var out, errb bytes.Buffer
	require.Equal(t, 0, profiled(path, []string{"help"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "pretrain")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(b), 2)
	require.Equal(t, []byte{0x1f, 0x8b}, b[:2], "a gzipped profile")
	require.Contains(t, errb.String(), "CPU profile in "+path)

	errb.Reset()
	require.Equal(t, 2, profiled(path, []string{"no-such-command"}, &out, &errb), "the command's exit code")
	errb.Reset()
	require.Equal(t, 2, profiled(filepath.Join(dir, "missing", "cpu.prof"), []string{"help"}, &out, &errb))
	require.Contains(t, errb.String(), "ZOO_CPUPROFILE")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left: %v", entries)

	out.Reset()
	require.Equal(t, 0, profiled("", []string{"help"}, &out, &errb), "no profile without the variable")
	require.Contains(t, out.String(), "pretrain")
}
