package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Tokenizer maps text to token ids in [0, VocabSize()) and back.
//
// Every Tokenizer this package returns is safe for concurrent use by
// multiple goroutines, and callers rely on it (pretrain.ReadBERTDocuments encodes
// in parallel): its methods only read it, but for caches, which lock (a
// byte-level BPE's word cache serves one Encode at a time, the others
// doing without), and unknown counts, which are atomic. Other
// implementations must be safe for concurrent use too.
type Tokenizer interface {
	// Encode returns the ids of text, with no special tokens added around
	// it. A character the tokenizer cannot represent is an error, unless
	// the tokenizer has an unknown token for it (see UnknownCounter).
	Encode(text string) ([]int, error)
	// Decode returns the text of ids. An id outside [0, VocabSize()) is an
	// error.
	Decode(ids []int) (string, error)
	// VocabSize is one more than the largest id Encode can return: the
	// number of rows of the embedding table.
	VocabSize() int
	// MarshalJSON returns the serialised tokenizer, exactly what Save
	// writes. Tokenize hashes it to key its cache.
	MarshalJSON() ([]byte, error)
	// Save writes the serialised tokenizer to path atomically.
	Save(path string) error
}

// UnknownCounter is implemented by tokenizers whose Encode maps a
// character or word outside the vocabulary to an unknown token instead of
// failing: the character tokenizer (NewCharTokenizer), whose unknown
// token is CharUnknown at id CharUnknownID, counts characters; WordPiece
// ([UNK]) and WordLevel (<unk>) count words. A tokenizer loaded from a
// zoo-char file, which has no unknown token, implements it too and
// returns 0.
//
// Unknown returns how many characters or words all Encode calls so far
// have mapped to the unknown token. It is safe for concurrent use. A pipeline reads it
// before and after encoding a corpus and reports the difference (see the
// example).
type UnknownCounter interface {
	Unknown() int
}

// LoadTokenizer reads a tokenizer saved by Save: a Hugging Face
// tokenizer.json (ours, or one made by Hugging Face's tools), or a
// character tokenizer in zoo's older zoo-char format. The tokenizer is
// safe for concurrent use (see Tokenizer).
//
// The file must be a regular file of at most 1 GB: a link to
// /dev/zero or a pipe is refused rather than read until memory runs out.
func LoadTokenizer(path string) (Tokenizer, error) {
	raw, err := readTokenizerFile(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: load tokenizer: %w", err)
	}
	tok, err := parseTokenizer(raw)
	if err != nil {
		return nil, fmt.Errorf("datasets: load tokenizer %s: %w", path, err)
	}
	return tok, nil
}

// maxTokenizerBytes bounds the size of a tokenizer file LoadTokenizer
// reads. The largest published tokenizer.json files are a few tens of MB
// (a 250k-token vocabulary with its merges is about 35 MB).
const maxTokenizerBytes = 1 << 30

// readTokenizerFile reads path, which must be a regular file of at most
// maxTokenizerBytes. It reads no more than that even if the file grows.
func readTokenizerFile(path string) ([]byte, error) {
	fi, err := os.Stat(path) // before Open: opening a FIFO blocks
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (mode %s)", path, fi.Mode())
	}
	if fi.Size() > maxTokenizerBytes {
		return nil, fmt.Errorf("%s: %d bytes is more than the %d-byte limit for a tokenizer", path, fi.Size(), maxTokenizerBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxTokenizerBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxTokenizerBytes {
		return nil, fmt.Errorf("%s: more than the %d-byte limit for a tokenizer", path, maxTokenizerBytes)
	}
	return raw, nil
}

// parseTokenizer tells the formats apart by their top-level keys, and a
// character tokenizer's tokenizer.json by its layout.
func parseTokenizer(raw []byte) (Tokenizer, error) {
	var head struct {
		Type  string          `json:"type"`
		Model json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	switch {
	case head.Type == charType:
		return parseChar(raw)
	case head.Model != nil:
		if t, ok := parseCharHF(raw); ok {
			return t, nil
		}
		// Models with a tokenizer of the zoo's own; a layout it does not
		// cover (ok false) goes to the sugarme path.
		own := map[string]func([]byte) (Tokenizer, bool, error){
			"WordPiece": func(b []byte) (Tokenizer, bool, error) { return parseWordPiece(b) },
			"WordLevel": func(b []byte) (Tokenizer, bool, error) { return parseWordLevel(b) },
		}
		var m typed
		if json.Unmarshal(head.Model, &m) == nil && own[m.Type] != nil {
			t, ok, err := own[m.Type](raw)
			if err != nil {
				return nil, err
			}
			if ok {
				return t, nil
			}
		}
		t, err := parseHF(raw)
		if err != nil {
			return nil, err
		}
		if t.post != nil {
			return &hfTemplated{t}, nil
		}
		return t, nil
	}
	return nil, errors.New(`neither a tokenizer.json (no "model") nor a character tokenizer (no "type": "` + charType + `")`)
}

// Unknowns is tok's count of characters or words mapped to its unknown
// token so far (UnknownCounter), or 0 for a tokenizer that has none.
func Unknowns(tok Tokenizer) int {
	if u, ok := tok.(UnknownCounter); ok {
		return u.Unknown()
	}
	return 0
}

// UnknownNote is the line a pipeline prints when encoding mapped n
// characters to the unknown token (a character tokenizer's), or "" when
// n is 0. UnknownNoteFor names the unit and the token of any tokenizer.
func UnknownNote(n int, what string) string {
	if n == 0 {
		return ""
	}
	return unknownLine(n, "character", what, "[UNK]")
}

// unknownLine is the note that n units (characters or words) of what
// were mapped to unk, singular for one.
func unknownLine(n int, unit, what, unk string) string {
	if n == 1 {
		return fmt.Sprintf("note: 1 %s of %s is not in the tokenizer's vocabulary and was mapped to %s\n", unit, what, unk)
	}
	return fmt.Sprintf("note: %d %ss of %s are not in the tokenizer's vocabulary and were mapped to %s\n", n, unit, what, unk)
}

// UnknownNoteFor is the line a pipeline prints when encoding what with
// tok mapped n characters or words to tok's unknown token (n is the growth
// of Unknowns(tok) over the encoding), or "" when n is 0: it names the
// unit (words for WordPiece and WordLevel, characters for the character
// tokenizer) and the unknown token.
func UnknownNoteFor(tok Tokenizer, n int, what string) string {
	if n <= 0 {
		return ""
	}
	switch t := tok.(type) {
	case *WordPiece:
		return unknownLine(n, "word", what, t.unk)
	case *WordLevel:
		return unknownLine(n, "word", what, t.unk)
	}
	return UnknownNote(n, what)
}
