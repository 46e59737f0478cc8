package datasets

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A reader of lines passes lines up to the bound and fails past it, however
// the reads are cut.
func TestLineLimit(t *testing.T) {
	ok := strings.Repeat("x", 10) + "\n" + strings.Repeat("y", 10) + "\n" + strings.Repeat("z", 10)
	b, err := io.ReadAll(newLineLimit(io.LimitReader(strings.NewReader(ok), int64(len(ok))), 10))
	require.NoError(t, err)
	require.Equal(t, ok, string(b))
	_, err = io.ReadAll(newLineLimit(strings.NewReader("short\n"+strings.Repeat("w", 11)), 10))
	require.ErrorContains(t, err, "a line is longer than")
	_, err = io.ReadAll(newLineLimit(io.MultiReader(strings.NewReader("aaaaaa"), strings.NewReader("bbbbbb\n")), 10))
	require.ErrorContains(t, err, "a line is longer than", "a line split across reads")
}
