package datasets

import (
	"bytes"
	"fmt"
	"io"
)

// MaxLineBytes bounds one line of a data file (a CSV record, a TSV pair, a
// JSONL example): 16 MiB, far above any real sentence or document, so that
// a file without line breaks (a link to /dev/zero, a binary file) is an
// error instead of a line gathered until memory runs out.
const MaxLineBytes = 16 << 20

// lineLimit passes a reader through, failing once a line grows past max
// bytes without a "\n".
type lineLimit struct {
	r       io.Reader
	max, at int // at: bytes since the last "\n"
}

func newLineLimit(r io.Reader, max int) io.Reader { return &lineLimit{r: r, max: max} }

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.at += len(b)
			break
		}
		if l.at+i > l.max {
			l.at += i
			break
		}
		l.at, b = 0, b[i+1:]
	}
	if l.at > l.max {
		return n, fmt.Errorf("a line is longer than %d MiB: this is not a line-based text file", l.max>>20)
	}
	return n, err
}
