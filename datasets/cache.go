package datasets

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// A token cache file is a 64-byte little-endian header followed by the
// tokens, each a little-endian uint16 or uint32:
//
//	offset size
//	0      8    magic "ZOOTOKS\x00"
//	8      4    format version (cacheVersion)
//	12     4    bytes per token (2 or 4)
//	16     8    number of tokens
//	24     4    vocabulary size
//	28     4    CRC-32C (Castagnoli) of the token bytes
//	32     32   key: SHA-256 of the corpus's files and the tokenizer
const (
	cacheMagic = "ZOOTOKS\x00"
	// 2: BPE encodes as Hugging Face does (ties between equal-rank
	// merges), so version-1 ids are stale. 3: BPE tokenizer.json files
	// with Metaspace, Prepend, Replace, NFKC … run natively; the ids
	// sugarme gave some of them differ. 4: so do files with a Split
	// pre-tokenizer (a String pattern), now run natively too. 5: Unigram
	// files run natively (sugarme's ids differ).
	cacheVersion = 5
	headerSize   = 64
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cacheHeader is the decoded header of a cache file.
type cacheHeader struct {
	width int // bytes per token
	count uint64
	vocab uint32
	crc   uint32
	key   [32]byte
}

// Tokenize returns the corpus's tokens under tok: the concatenation of
// tok.Encode of each chunk of Corpus.Each.
//
// With a non-empty cacheDir the tokens are cached there in
// tokens-<key>.bin, keyed by the corpus (each file's absolute path, size
// and modification time, and CorpusOptions) and the tokenizer (SHA-256 of
// its MarshalJSON). A later call with the same key reads the file instead
// of tokenizing; a file that is truncated, corrupt (checksum) or made for
// another key is ignored and rewritten. Files of other keys are left in
// place. It is an error if a corpus file changed since OpenCorpus, or if
// the corpus yields no tokens.
func Tokenize(c *Corpus, tok Tokenizer, cacheDir string) (*Tokens, error) {
	return TokenizeContext(context.Background(), c, tok, cacheDir)
}

// TokenizeContext is Tokenize that stops when ctx is done, checking it
// before each chunk of the corpus, and returns an error wrapping ctx.Err()
// (context.Canceled on an interrupt). Nothing is cached then.
func TokenizeContext(ctx context.Context, c *Corpus, tok Tokenizer, cacheDir string) (*Tokens, error) {
	if err := c.checkUnchanged(); err != nil {
		return nil, fmt.Errorf("datasets: tokenize: %w", err)
	}
	vocab := tok.VocabSize()
	if vocab <= 0 || int64(vocab) > math.MaxUint32 {
		return nil, fmt.Errorf("datasets: tokenize: vocabulary size %d is not in [1, 2^32)", vocab)
	}
	raw, err := tok.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("datasets: tokenize: serialise the tokenizer: %w", err)
	}
	key := cacheKey(c, raw)
	var path string
	if cacheDir != "" {
		path = filepath.Join(cacheDir, fmt.Sprintf("tokens-%x.bin", key[:8]))
		if t, err := readCache(path, key, vocab); err == nil {
			return t, nil
		}
	}
	t := newTokens(vocab, int(min(c.Size()/4, 1<<30)))
	err = c.EachContext(ctx, func(text string) error {
		ids, err := tok.Encode(text)
		if err != nil {
			return err
		}
		return t.appendIDs(ids)
	})
	if err != nil {
		return nil, fmt.Errorf("datasets: tokenize: %w", err)
	}
	if t.Len() == 0 {
		return nil, errors.New("datasets: tokenize: the corpus gave no tokens")
	}
	if cacheDir != "" {
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("datasets: tokenize: cache: %w", err)
		}
		if err := writeCache(path, key, t); err != nil {
			return nil, fmt.Errorf("datasets: tokenize: cache: %w", err)
		}
	}
	return t, nil
}

// checkUnchanged fails if a file's size or modification time differs from
// what OpenCorpus saw, so a cache key never describes other text.
func (c *Corpus) checkUnchanged() error {
	for _, f := range c.files {
		fi, err := os.Stat(f.path)
		if err != nil {
			return err
		}
		if fi.Size() != f.size || fi.ModTime().UnixNano() != f.modTime {
			return fmt.Errorf("%s changed since the corpus was opened", f.path)
		}
	}
	return nil
}

// cacheKey hashes what the tokens depend on.
func cacheKey(c *Corpus, tokenizerJSON []byte) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "zoo datasets tokens v%d\nchunk %d\nreplace-invalid %v\n", cacheVersion, chunkSize, c.opts.ReplaceInvalid)
	for _, f := range c.files {
		fmt.Fprintf(h, "file %q %d %d\n", f.path, f.size, f.modTime)
	}
	fmt.Fprintf(h, "tokenizer %x\n", sha256.Sum256(tokenizerJSON))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// writeCache writes t to path atomically.
func writeCache(path string, key [32]byte, t *Tokens) error {
	width := 2
	if t.wide() {
		width = 4
	}
	crc := crc32.New(castagnoli)
	if err := writeTokens(crc, t); err != nil {
		return err
	}
	var h [headerSize]byte
	copy(h[0:8], cacheMagic)
	binary.LittleEndian.PutUint32(h[8:], cacheVersion)
	binary.LittleEndian.PutUint32(h[12:], uint32(width))
	binary.LittleEndian.PutUint64(h[16:], uint64(t.Len()))
	binary.LittleEndian.PutUint32(h[24:], uint32(t.vocab))
	binary.LittleEndian.PutUint32(h[28:], crc.Sum32())
	copy(h[32:], key[:])
	return atomicfile.WriteFile(path, func(w io.Writer) error {
		if _, err := w.Write(h[:]); err != nil {
			return err
		}
		return writeTokens(w, t)
	})
}

// writeTokens writes the token bytes, little-endian, in 64 KiB blocks.
func writeTokens(w io.Writer, t *Tokens) error {
	buf := make([]byte, 0, 64<<10)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for i, n := 0, t.Len(); i < n; i++ {
		if t.wide() {
			buf = binary.LittleEndian.AppendUint32(buf, t.u32[i])
		} else {
			buf = binary.LittleEndian.AppendUint16(buf, t.u16[i])
		}
		if len(buf) == cap(buf) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// readCache loads a cache file, failing unless it is whole and was made for
// key with a vocabulary of vocab ids.
func readCache(path string, key [32]byte, vocab int) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	switch {
	case h.key != key:
		return nil, errors.New("made for another corpus or tokenizer")
	case int(h.vocab) != vocab:
		return nil, fmt.Errorf("vocabulary size %d, want %d", h.vocab, vocab)
	case h.count == 0 || h.count > uint64(fi.Size()):
		return nil, fmt.Errorf("bad token count %d", h.count)
	case fi.Size() != headerSize+int64(h.count)*int64(h.width):
		return nil, fmt.Errorf("%d bytes, want %d", fi.Size(), headerSize+int64(h.count)*int64(h.width))
	}
	t := newTokens(vocab, int(h.count))
	if (h.width == 4) != t.wide() {
		return nil, fmt.Errorf("%d bytes per token for a vocabulary of %d", h.width, vocab)
	}
	crc := crc32.New(castagnoli)
	buf := make([]byte, 64<<10)
	for left := int64(h.count) * int64(h.width); left > 0; {
		b := buf[:min(int64(len(buf)), left)]
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		crc.Write(b)
		left -= int64(len(b))
		for i := 0; i < len(b); i += h.width {
			var id uint32
			if h.width == 4 {
				id = binary.LittleEndian.Uint32(b[i:])
				t.u32 = append(t.u32, id)
			} else {
				id = uint32(binary.LittleEndian.Uint16(b[i:]))
				t.u16 = append(t.u16, uint16(id))
			}
			if int64(id) >= int64(vocab) {
				return nil, fmt.Errorf("token id %d is outside [0, %d)", id, vocab)
			}
		}
	}
	if crc.Sum32() != h.crc {
		return nil, errors.New("checksum mismatch")
	}
	return t, nil
}

// readHeader reads and checks the fixed part of a cache header.
func readHeader(r io.Reader) (cacheHeader, error) {
	var b [headerSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return cacheHeader{}, err
	}
	if !bytes.Equal(b[:8], []byte(cacheMagic)) {
		return cacheHeader{}, errors.New("not a token cache file")
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != cacheVersion {
		return cacheHeader{}, fmt.Errorf("format version %d, want %d", v, cacheVersion)
	}
	h := cacheHeader{
		width: int(binary.LittleEndian.Uint32(b[12:])),
		count: binary.LittleEndian.Uint64(b[16:]),
		vocab: binary.LittleEndian.Uint32(b[24:]),
		crc:   binary.LittleEndian.Uint32(b[28:]),
	}
	copy(h.key[:], b[32:])
	if h.width != 2 && h.width != 4 {
		return cacheHeader{}, fmt.Errorf("%d bytes per token", h.width)
	}
	return h, nil
}
