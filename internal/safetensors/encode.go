package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// Encode writes tensors as a safetensors file to w. Tensors appear in the
// header and the data buffer in the order given; metadata, if non-empty, is
// written as "__metadata__". The JSON header is padded with spaces to a
// multiple of 8 bytes, as the Rust library does, so the data buffer is
// 8-byte aligned. Duplicate names, the reserved name "__metadata__", names
// or metadata that are not valid UTF-8, unknown dtypes, negative dims and
// Data whose length disagrees with the shape are errors; nothing is written
// in that case.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header, err := encodeHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := writeAll(w, header, tensors); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

// WriteFile encodes tensors and metadata like Encode and writes them
// atomically to path via atomicfile.WriteFile.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	header, err := encodeHeader(tensors, metadata)
	if err != nil {
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, func(w io.Writer) error {
		return writeAll(w, header, tensors)
	})
}

// writeAll writes the length prefix, the header and every tensor's data.
func writeAll(w io.Writer, header []byte, tensors []Tensor) error {
	var prefix [8]byte
	le.PutUint64(prefix[:], uint64(len(header)))
	if _, err := w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := w.Write(header); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// encodeHeader validates tensors and metadata and returns the padded JSON
// header.
func encodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if len(metadata) > 0 {
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, fmt.Errorf("metadata %q: %q is not valid UTF-8", k, v)
			}
		}
		b.WriteString(`"` + metadataKey + `":`)
		if err := appendJSON(&b, metadata); err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
	}
	seen := make(map[string]bool, len(tensors))
	var offset uint64
	for _, t := range tensors {
		if err := checkEncodable(t, seen); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		if err := appendJSON(&b, t.Name); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		b.WriteString(`:{"dtype":"` + string(t.DType) + `","shape":[`)
		for i, d := range t.Shape {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		end := offset + uint64(len(t.Data))
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, offset, end)
		offset = end
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > MaxHeaderSize {
		return nil, fmt.Errorf("header is %d bytes, over the %d-byte limit", b.Len(), MaxHeaderSize)
	}
	return b.Bytes(), nil
}

// checkEncodable validates one tensor for writing and records its name.
func checkEncodable(t Tensor, seen map[string]bool) error {
	switch {
	case t.Name == metadataKey:
		return errors.New("name is reserved for metadata")
	case !utf8.ValidString(t.Name):
		return errors.New("name is not valid UTF-8")
	case seen[t.Name]:
		return errors.New("duplicate tensor name")
	}
	seen[t.Name] = true
	_, err := t.validate()
	return err
}

// appendJSON appends v as JSON without HTML escaping.
func appendJSON(b *bytes.Buffer, v any) error {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
	return nil
}
