package brown

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	s, err := Parse("ca01", strings.NewReader("\n\tThe/at Fulton/np-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n\n\tJr./np ./.\n"))
	require.NoError(t, err)
	require.Len(t, s, 2)
	require.Equal(t, []string{"at", "np-tl", "vbd", "``", "at", "nn", "''", "."}, s[0].Tags)
	texts, err := Texts("ca01", strings.NewReader("\tThe/at Fulton/np-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n\tJr./np ./.\n(/( a/at )/) ,/,\n"))
	require.NoError(t, err)
	require.Equal(t, []string{`The Fulton said "no evidence".`, "Jr.", "(a),"}, texts)

	_, err = Parse("ca02", strings.NewReader("fine/jj\nbroken\n"))
	require.EqualError(t, err, `ca02:2: token "broken" is not word/tag`)
	_, err = Parse("ca03", strings.NewReader(strings.Repeat("x", MaxLine+10)))
	require.ErrorContains(t, err, "not a Brown file")
}
