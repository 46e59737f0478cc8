package datasets

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/normalizer"
	"github.com/sugarme/tokenizer/pretokenizer"
)

// hfPieces is Hugging Face tokenizers' GPT-2 pre-tokenization of each
// string, from tokenizers 0.23.2 (npm package "tokenizers", its Node
// bindings): byteLevelPreTokenizer(false, true).preTokenizeString(s),
// keeping the piece strings.
var hfPieces = []struct {
	in   string
	want []string
}{
	{"Hello world", []string{"Hello", "Ġworld"}},
	{"\n\nThe end", []string{"Ċ", "Ċ", "The", "Ġend"}},
	{"  two spaces", []string{"Ġ", "Ġtwo", "Ġspaces"}},
	{"trailing   ", []string{"trailing", "ĠĠĠ"}},
	{"a\tb\t\tc", []string{"a", "ĉ", "b", "ĉ", "ĉ", "c"}},
	{"it's they'll I'm we've you'd can't", []string{"it", "'s", "Ġthey", "'ll", "ĠI", "'m", "Ġwe", "'ve", "Ġyou", "'d", "Ġcan", "'t"}},
	{"'s 'S ''s ?'s", []string{"'s", "Ġ'", "S", "Ġ''", "s", "Ġ?'", "s"}},
	{" 'tis", []string{"Ġ'", "tis"}},
	{"A 123 4½ x² ٣٤", []string{"A", "Ġ123", "Ġ4Â½", "Ġx", "Â²", "ĠÙ£Ù¤"}},
	{"naïve café 日本語 🙂🙂", []string{"naÃ¯ve", "ĠcafÃ©", "ĠæĹ¥æľ¬èªŀ", "ĠðŁĻĤðŁĻĤ"}},
	{"a\u00a0\u00a0b", []string{"a", "Âł", "Âł", "b"}},
	{"a\u00a0!", []string{"a", "Âł", "!"}},
	{"x\u3000y", []string{"x", "ãĢĢ", "y"}},
	{"a\u200b\u200bb", []string{"a", "âĢĭâĢĭ", "b"}},
	{"line\r\nnext", []string{"line", "č", "Ċ", "next"}},
	{" \n x", []string{"ĠĊ", "Ġx"}},
	{"!!! ??? ...", []string{"!!!", "Ġ???", "Ġ..."}},
	{"end.\n", []string{"end", ".", "Ċ"}},
	{" ", []string{"Ġ"}},
	{"\n", []string{"Ċ"}},
	{"don't\n\n\tTab", []string{"don", "'t", "ĊĊ", "ĉ", "Tab"}},
	{"e.g. U.S.A.", []string{"e", ".", "g", ".", "ĠU", ".", "S", ".", "A", "."}},
	{"mix3d w0rds", []string{"mix", "3", "d", "Ġw", "0", "rds"}},
}

func TestGPT2PiecesMatchHuggingFace(t *testing.T) {
	for _, c := range hfPieces {
		var got []string
		end := 0
		gpt2Pieces(c.in, func(lo, hi int) {
			require.Equal(t, end, lo, "pieces are contiguous")
			end = hi
			got = append(got, byteSymbolsOf(c.in[lo:hi]))
		})
		assert.Equal(t, len(c.in), end, "pieces cover %q", c.in)
		assert.Equal(t, c.want, got, "%q", c.in)
	}
}

func TestByteLevelPreTokenizer(t *testing.T) {
	// The sugarme PreTokenizer gives the same pieces as gpt2Pieces.
	pre := &byteLevel{useRegex: true}
	for _, c := range hfPieces {
		pt, err := pre.PreTokenize(tokenizer.NewPreTokenizedString(c.in))
		require.NoError(t, err)
		var got []string
		for _, s := range pt.GetSplits(normalizer.NormalizedTarget, tokenizer.Byte) {
			got = append(got, s.Value)
		}
		assert.Equal(t, c.want, got, "%q", c.in)
	}
	// sugarme's own ByteLevel splits "\n\nThe" differently: this is why
	// byteLevel exists.
	pt, err := (&pretokenizer.ByteLevel{}).PreTokenize(tokenizer.NewPreTokenizedString("\n\nThe"))
	require.NoError(t, err)
	var got []string
	for _, s := range pt.GetSplits(normalizer.NormalizedTarget, tokenizer.Byte) {
		got = append(got, s.Value)
	}
	assert.Equal(t, []string{"ĊĊ", "The"}, got)

	// use_regex false: one piece; add_prefix_space: a leading Ġ.
	pt, err = (&byteLevel{addPrefixSpace: true}).PreTokenize(tokenizer.NewPreTokenizedString("a b\n"))
	require.NoError(t, err)
	got = nil
	for _, s := range pt.GetSplits(normalizer.NormalizedTarget, tokenizer.Byte) {
		got = append(got, s.Value)
	}
	assert.Equal(t, []string{"ĠaĠbĊ"}, got)
}

func TestByteSymbols(t *testing.T) {
	syms := byteSymbols()
	require.Len(t, syms, 256)
	assert.Equal(t, "!", syms[0], "GPT-2's printable bytes come first by code point")
	assert.Equal(t, "Ġ", byteSymbolsOf(" "))
	assert.Equal(t, "Ċ", byteSymbolsOf("\n"))
	assert.Equal(t, "Ã©", byteSymbolsOf("é"))
	seen := map[string]bool{}
	for _, s := range syms {
		assert.False(t, seen[s])
		seen[s] = true
		assert.Equal(t, 1, len([]rune(s)))
	}
	assert.True(t, strings.Contains(strings.Join(syms, ""), "Ā"), "byte 0 maps to U+0100")
}
