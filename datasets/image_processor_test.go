package datasets

import (
	"encoding/json"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// hfViTProcessorJSON is google/vit-base-patch16-224's
// preprocessor_config.json (transformers 4.x), as Hugging Face writes it.
const hfViTProcessorJSON = `{
  "do_normalize": true,
  "do_rescale": true,
  "do_resize": true,
  "image_mean": [0.5, 0.5, 0.5],
  "image_processor_type": "ViTImageProcessor",
  "image_std": [0.5, 0.5, 0.5],
  "resample": 2,
  "rescale_factor": 0.00392156862745098,
  "size": {"height": 224, "width": 224}
}`

func TestReadProcessorConfig(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       func(c *ProcessorConfig)
		err        string
	}{
		{name: "hf vit", json: hfViTProcessorJSON, want: func(c *ProcessorConfig) {}},
		{name: "defaults", json: `{}`, want: func(c *ProcessorConfig) {}},
		{name: "old feature extractor", json: `{"feature_extractor_type": "ViTFeatureExtractor", "size": 32, "resample": 3, "do_pad": false}`, want: func(c *ProcessorConfig) {
			c.Size = ImageSize{32, 32}
			c.Resample = ResampleBicubic
			c.Extra = map[string]json.RawMessage{"feature_extractor_type": json.RawMessage(`"ViTFeatureExtractor"`), "do_pad": json.RawMessage(`false`)}
		}},
		{name: "grey", json: `{"image_mean": [0.2860], "image_std": [0.3530], "size": {"height": 28, "width": 28}, "do_convert_rgb": false}`, want: func(c *ProcessorConfig) {
			c.ImageMean, c.ImageStd = []float64{0.2860}, []float64{0.3530}
			c.Size = ImageSize{28, 28}
			f := false
			c.DoConvertRGB = &f
		}},
		{name: "crop", json: `{"do_center_crop": true, "crop_size": {"height": 200, "width": 200}}`, want: func(c *ProcessorConfig) {
			c.DoCenterCrop = true
			c.CropSize = &ImageSize{200, 200}
		}},
		{name: "fast processor", json: `{"data_format": "channels_first", "default_to_square": true, "pad_size": null, "do_center_crop": null, "crop_size": null}`, want: func(c *ProcessorConfig) {
			c.Extra = map[string]json.RawMessage{"data_format": json.RawMessage(`"channels_first"`), "default_to_square": json.RawMessage(`true`), "pad_size": json.RawMessage(`null`)}
		}},
		{name: "channels last", json: `{"data_format": "channels_last"}`, err: "channels first"},
		{name: "unknown key", json: `{"do_random_thing": true}`, err: `unknown key "do_random_thing"`},
		{name: "pad on", json: `{"do_pad": true}`, err: `key "do_pad" is true`},
		{name: "shortest edge", json: `{"size": {"shortest_edge": 224}}`, err: "want {\"height\": H, \"width\": W}"},
		{name: "bad resample", json: `{"resample": 7}`, err: "resample 7"},
		{name: "zero std", json: `{"image_std": [0.5, 0, 0.5]}`, err: "image_std[1] is 0"},
		{name: "zero size", json: `{"size": {"height": 0, "width": 3}}`, err: "size 0×3"},
		{name: "crop larger", json: `{"do_center_crop": true, "crop_size": {"height": 300, "width": 2}}`, err: "crop_size 300×2 is larger"},
		{name: "wrong type", json: `{"do_resize": "yes"}`, err: "do_resize"},
		{name: "not json", json: `{`, err: "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), ProcessorConfigFile)
			require.NoError(t, os.WriteFile(p, []byte(tc.json), 0o644))
			got, err := ReadProcessorConfig(filepath.Dir(p))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, p)
				return
			}
			require.NoError(t, err)
			want := DefaultProcessorConfig()
			tc.want(&want)
			require.Equal(t, want, got)
			// Written and read back: the same, Extra included.
			dir := t.TempDir()
			require.NoError(t, got.Save(dir))
			again, err := ReadProcessorConfig(dir)
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

func TestProcessorConfigWritesHFForm(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, DefaultProcessorConfig().Save(dir))
	b, err := os.ReadFile(filepath.Join(dir, ProcessorConfigFile))
	require.NoError(t, err)
	var got, want map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	require.NoError(t, json.Unmarshal([]byte(hfViTProcessorJSON), &want))
	require.Equal(t, want, got)
}

func TestImageProcessor(t *testing.T) {
	// A 4×2 image of known values, processed without resizing: each value
	// v maps to (v/255 − mean)/std.
	g := image.NewGray(image.Rect(0, 0, 4, 2))
	copy(g.Pix, []uint8{0, 51, 102, 255, 255, 0, 153, 204})
	cfg := DefaultProcessorConfig()
	cfg.Size = ImageSize{Height: 2, Width: 4}
	for _, tc := range []struct {
		name      string
		c         int
		mean, std []float64
		want      []float32
	}{
		{"grey", 1, []float64{0.5}, []float64{0.5}, []float32{-1, -0.6, -0.2, 1, 1, -1, 0.2, 0.6}},
		{"grey mean std", 1, []float64{0.2}, []float64{0.4}, []float32{-0.5, 0, 0.5, 2, 2, -0.5, 1, 1.5}},
		{"rgb per channel", 3, []float64{0, 0.5, 1}, []float64{1, 0.5, 0.25}, []float32{
			0, 0.2, 0.4, 1, 1, 0, 0.6, 0.8,
			-1, -0.6, -0.2, 1, 1, -1, 0.2, 0.6,
			-4, -3.2, -2.4, 0, 0, -4, -1.6, -0.8,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.ImageMean, c.ImageStd = tc.mean, tc.std
			p, err := NewImageProcessor(c, tc.c)
			require.NoError(t, err)
			got, err := p.Process(g)
			require.NoError(t, err)
			require.InDeltaSlice(t, tc.want, got, 1e-6)
		})
	}
	_, err := NewImageProcessor(cfg, 1)
	require.ErrorContains(t, err, "image_mean has 3 values for 1 channels")
	_, err = NewImageProcessor(cfg, 2)
	require.ErrorContains(t, err, "2 channels")
}

func TestImageProcessorResizeCropFile(t *testing.T) {
	cfg := DefaultProcessorConfig()
	cfg.Size = ImageSize{Height: 12, Width: 10}
	cfg.DoCenterCrop, cfg.CropSize = true, &ImageSize{Height: 8, Width: 8}
	p, err := NewImageProcessor(cfg, 3)
	require.NoError(t, err)
	p.MinSize = 4
	h, w := p.OutputSize()
	require.Equal(t, []int{8, 8, 192}, []int{h, w, p.Len()})
	dir := t.TempDir()
	good := filepath.Join(dir, "a.png")
	require.NoError(t, os.WriteFile(good, encode(t, testImage(30, 20), "png"), 0o644))
	px, err := p.ProcessFile(good)
	require.NoError(t, err)
	require.Len(t, px, 192)
	for _, v := range px {
		require.True(t, v >= -1 && v <= 1, "%g out of [-1, 1]", v)
	}
	small := filepath.Join(dir, "small.png")
	require.NoError(t, os.WriteFile(small, encode(t, testImage(3, 20), "png"), 0o644))
	_, err = p.ProcessFile(small)
	require.ErrorContains(t, err, "small.png: 3×20 pixels is smaller than the model's patch of 4×4")
	bad := filepath.Join(dir, "bad.jpg")
	require.NoError(t, os.WriteFile(bad, []byte("\xff\xd8\xff\xe0 truncated"), 0o644))
	_, err = p.ProcessFile(bad)
	require.ErrorContains(t, err, "bad.jpg")

	cfg.DoResize, cfg.DoCenterCrop = false, false
	p, err = NewImageProcessor(cfg, 3)
	require.NoError(t, err)
	_, err = p.ProcessFile(good)
	require.ErrorContains(t, err, "a 30×20 image for an input of 10×12")
}

func TestImageProcessorGreyModelOfRGB(t *testing.T) {
	// A grey model converts an RGB image to luma first, then resizes: the
	// same pixels as resizing the luma image.
	img := testImage(12, 9)
	cfg := DefaultProcessorConfig()
	cfg.Size = ImageSize{Height: 5, Width: 7}
	cfg.ImageMean, cfg.ImageStd = []float64{0}, []float64{1}
	cfg.DoRescale = false
	p, err := NewImageProcessor(cfg, 1)
	require.NoError(t, err)
	got, err := p.Process(img)
	require.NoError(t, err)
	luma, err := ImageChannels(img, 1)
	require.NoError(t, err)
	small, err := ResizeImage(&image.Gray{Pix: luma, Stride: 12, Rect: image.Rect(0, 0, 12, 9)}, 7, 5, ResampleBilinear)
	require.NoError(t, err)
	want := make([]float32, 35)
	for i, v := range small.(*image.Gray).Pix {
		want[i] = float32(v)
	}
	require.Equal(t, want, got)
}
