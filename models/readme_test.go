package models_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's Go example compiles as the program it shows, against the
// packages as they are (issue 36: a newcomer copies it).
func TestReadmeGoExampleCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "## Use it from Go")
	require.True(t, ok, "the README has a Use it from Go section")
	_, code, ok := strings.Cut(after, "```go\n")
	require.True(t, ok, "the section has a Go block")
	code, _, ok = strings.Cut(code, "```")
	require.True(t, ok)
	require.Contains(t, code, "package main")
	// A directory starting with _ is no package of ./..., and is in the
	// module, so the example builds against this checkout.
	dir, err := os.MkdirTemp(root, "_readme-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644))
	cmd := exec.Command(goBin, "vet", "./"+filepath.Base(dir))
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's Go example does not compile:\n%s", out)
}

// Every relative link of the README and of docs/ names a file that exists.
func TestDocLinksExist(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append(files, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			_, err := os.Stat(filepath.Join(filepath.Dir(f), target))
			require.NoError(t, err, "%s links to %s", filepath.Base(f), target)
		}
	}
}
