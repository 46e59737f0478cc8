package goroot

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// $GOROOT wins; without it the go command on PATH answers; with neither,
// the answer is empty. The toolchain running the tests has Opticks.
func TestLookup(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOROOT" {
				return v
			}
			return ""
		}
	}
	require.Equal(t, "/opt/go", lookup(env("/opt/go"), func(string) (string, error) { return "", errors.New("unused") }))
	require.Empty(t, lookup(env(""), func(string) (string, error) { return "", errors.New("no go on PATH") }))

	fromGo := lookup(env(""), exec.LookPath) // the go command running the tests
	require.FileExists(t, filepath.Join(fromGo, "src", "testdata", "Isaac.Newton-Opticks.txt"))

	got := Dir()
	require.NotEmpty(t, got, "the tests run with a go command")
	_, err := os.Stat(Opticks())
	require.NoError(t, err, "Go ships Opticks in %s", got)
}
