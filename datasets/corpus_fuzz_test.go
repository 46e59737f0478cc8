package datasets

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCorpusEach reads arbitrary bytes as a one-file corpus, with and
// without CorpusOptions.ReplaceInvalid. Each must never panic; its chunks
// must concatenate to the file's text (each invalid byte replaced by
// U+FFFD when asked), and without replacement invalid UTF-8 must be an
// error naming the offset of the first bad byte.
//
// The seeds longer than chunkSize put a newline, a character split across
// the chunk boundary and invalid bytes at the boundary.
func FuzzCorpusEach(f *testing.F) {
	long := strings.Repeat("x", chunkSize-2)
	for _, s := range []string{
		"hello world\n",
		"no newline at the end",
		"héllo ☃ 𝄞\r\n\n",
		"bad \xff byte\n",
		"truncated \xe2\x82",
		"\xe2\x82a\xc3",
		"\xef\xbf\xbd is a real U+FFFD",
		long + "☃ after the boundary",       // 3-byte character split by the chunk end
		long + "\n\xe2\x82\xac more",        // newline before the boundary
		long + "ab\xff" + long + "\xf0\x9f", // invalid bytes after the first chunk
		strings.Repeat("y", 3*chunkSize+1),  // no newline at all
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	path := filepath.Join(f.TempDir(), "corpus.txt")
	f.Fuzz(func(t *testing.T, data []byte, replace bool) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := OpenCorpus(path, CorpusOptions{ReplaceInvalid: replace})
		if err != nil {
			if len(data) != 0 {
				t.Fatalf("OpenCorpus of a %d-byte file: %v", len(data), err)
			}
			return
		}
		var got strings.Builder
		err = c.Each(func(text string) error {
			if text == "" {
				return fmt.Errorf("empty chunk")
			}
			got.WriteString(text)
			return nil
		})
		var want strings.Builder
		firstBad := -1
		for i := 0; i < len(data); {
			r, w := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && w == 1 && firstBad < 0 {
				firstBad = i
			}
			want.WriteRune(r)
			i += w
		}
		switch {
		case !replace && firstBad >= 0:
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("invalid UTF-8 at byte offset %d", firstBad)) {
				t.Fatalf("first invalid byte at %d: got error %v", firstBad, err)
			}
		case err != nil:
			t.Fatalf("Each: %v", err)
		case got.String() != want.String():
			t.Fatalf("chunks concatenate to %q, want %q", got.String(), want.String())
		}
	})
}
