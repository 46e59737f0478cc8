package datasets

import (
	"bytes"
	"testing"
)

// FuzzParseIDX feeds arbitrary bytes, plain and gzipped, to ParseIDX: it
// must return an error or sizes whose product is the data's length, never
// panic.
func FuzzParseIDX(f *testing.F) {
	m, ids := tinyIDX()
	f.Add(append(append([]byte{}, idxHeader...), m.Pix...), false)
	f.Add(append([]byte{0, 0, 8, 1, 0, 0, 0, 3}, ids...), true)
	f.Add(idxHeader[:9], false)
	f.Add([]byte{0x1f, 0x8b}, false)
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		if gz {
			data = gzipped(data)
		}
		for _, magic := range []uint32{IDXImagesMagic, IDXLabelsMagic} {
			dims, px, err := ParseIDX(bytes.NewReader(data), magic)
			if err != nil {
				continue
			}
			n := 1
			for _, d := range dims {
				n *= d
			}
			if n != len(px) || len(dims) != int(magic&0xff) {
				t.Fatalf("dims %v for %d bytes", dims, len(px))
			}
			if magic == IDXImagesMagic && dims[0] > 0 {
				img := (&IDXImages{N: dims[0], Rows: dims[1], Cols: dims[2], Pix: px}).Image(dims[0] - 1)
				if len(img.Pix) != dims[1]*dims[2] {
					t.Fatalf("image of %d pixels", len(img.Pix))
				}
			}
		}
	})
}
