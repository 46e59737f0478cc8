package datasets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// ProcessorConfigFile is the name of the image processor's settings beside
// a checkpoint, as Hugging Face names it.
const ProcessorConfigFile = "preprocessor_config.json"

// ImageSize is an image size in Hugging Face's {"height": H, "width": W}
// form. Reading also accepts the older single number (a square).
type ImageSize struct {
	Height int `json:"height"`
	Width  int `json:"width"`
}

// UnmarshalJSON reads {"height": H, "width": W} or a number N (N × N), and
// refuses {"shortest_edge": …} and the other forms that keep the aspect
// ratio, which ViTImageProcessor does not use.
func (s *ImageSize) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*s = ImageSize{Height: n, Width: n}
		return nil
	}
	type plain ImageSize
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("size %s: want {\"height\": H, \"width\": W}: %w", b, err)
	}
	*s = ImageSize(p)
	return nil
}

// ProcessorConfig is Hugging Face's ViTImageProcessor configuration, as
// written to preprocessor_config.json (transformers
// models/vit/image_processing_vit.py, ViTImageProcessor.__init__), with
// DeiT's optional centre crop (do_center_crop, crop_size, from
// models/deit/image_processing_deit.py). Keys it does not know and that
// do not change processing are kept in Extra and written back.
type ProcessorConfig struct {
	// DoResize resizes to Size with Resample.
	DoResize bool      `json:"do_resize"`
	Size     ImageSize `json:"size"`
	Resample Resample  `json:"resample"`
	// DoCenterCrop then cuts the central CropSize (not in
	// ViTImageProcessor; DeiT's names).
	DoCenterCrop bool       `json:"do_center_crop,omitempty"`
	CropSize     *ImageSize `json:"crop_size,omitempty"`
	// DoRescale multiplies pixel values 0…255 by RescaleFactor.
	DoRescale     bool    `json:"do_rescale"`
	RescaleFactor float64 `json:"rescale_factor"`
	// DoNormalize then maps v to (v − ImageMean[c]) / ImageStd[c]; a list
	// of one value serves every channel.
	DoNormalize bool      `json:"do_normalize"`
	ImageMean   []float64 `json:"image_mean"`
	ImageStd    []float64 `json:"image_std"`
	// DoConvertRGB is Hugging Face's flag; zoo always converts to the
	// model's channels (ImageChannels), so it is only kept and written back.
	DoConvertRGB       *bool  `json:"do_convert_rgb,omitempty"`
	ImageProcessorType string `json:"image_processor_type"`
	// Extra holds inert keys read from a file (processor_class, …).
	Extra map[string]json.RawMessage `json:"-"`
}

// DefaultProcessorConfig is ViTImageProcessor's default: resize to 224 ×
// 224 bilinearly, rescale by 1/255, normalise with mean and std 0.5
// (IMAGENET_STANDARD_MEAN and _STD), so that pixels land in [−1, 1].
func DefaultProcessorConfig() ProcessorConfig {
	return ProcessorConfig{
		DoResize:           true,
		Size:               ImageSize{Height: 224, Width: 224},
		Resample:           ResampleBilinear,
		DoRescale:          true,
		RescaleFactor:      1.0 / 255,
		DoNormalize:        true,
		ImageMean:          []float64{0.5, 0.5, 0.5},
		ImageStd:           []float64{0.5, 0.5, 0.5},
		ImageProcessorType: "ViTImageProcessor",
	}
}

// processorKeys are the keys ProcessorConfig reads.
var processorKeys = map[string]bool{
	"do_resize": true, "size": true, "resample": true, "do_center_crop": true, "crop_size": true,
	"do_rescale": true, "rescale_factor": true, "do_normalize": true, "image_mean": true,
	"image_std": true, "do_convert_rgb": true, "image_processor_type": true,
}

// inertKeys are keys that do not change processing: kept in Extra. The
// fast processors of newer transformers also save their call defaults
// (default_to_square, return_tensors, device, …).
var inertKeys = map[string]bool{
	"feature_extractor_type": true, "processor_class": true, "_processor_class": true,
	"auto_map": true, "_valid_processor_keys": true, "model_input_names": true,
	"default_to_square": true, "return_tensors": true, "device": true, "disable_grouping": true,
	"input_data_format": true,
}

// inertWhenFalse are switches of other processors that are inert when off
// (kept) and unsupported when on (an error).
var inertWhenFalse = map[string]bool{
	"do_pad": true, "do_flip_channel_order": true, "do_reduce_labels": true,
}

// ReadProcessorConfig reads a preprocessor_config.json strictly: keys left
// out take ViTImageProcessor's defaults, inert keys are kept in Extra, and
// a key that would change processing in a way zoo does not implement is an
// error naming it. A path to a directory reads the file in it.
func ReadProcessorConfig(path string) (ProcessorConfig, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, ProcessorConfigFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ProcessorConfig{}, fmt.Errorf("image processor: %w", err)
	}
	cfg, err := ParseProcessorConfig(b)
	if err != nil {
		return ProcessorConfig{}, fmt.Errorf("image processor: %s: %w", path, err)
	}
	return cfg, nil
}

// ParseProcessorConfig parses the JSON of a preprocessor_config.json (see
// ReadProcessorConfig) and validates it.
func ParseProcessorConfig(b []byte) (ProcessorConfig, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return ProcessorConfig{}, err
	}
	known := map[string]json.RawMessage{}
	extra := map[string]json.RawMessage{}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		switch {
		case processorKeys[k]:
			known[k] = v
		case inertKeys[k] || string(v) == "null":
			// null is "not set": the default, which for an unknown
			// option is off.
			extra[k] = v
		case k == "data_format":
			if string(v) != `"channels_first"` {
				return ProcessorConfig{}, fmt.Errorf("data_format %s: zoo's pixels are channels first (C, H, W)", v)
			}
			extra[k] = v
		case inertWhenFalse[k]:
			var on bool
			if err := json.Unmarshal(v, &on); err != nil || on {
				return ProcessorConfig{}, fmt.Errorf("key %q is %s: zoo's ViT processor does not implement it; set it to false or remove it", k, v)
			}
			extra[k] = v
		default:
			return ProcessorConfig{}, fmt.Errorf("unknown key %q: zoo reads ViTImageProcessor's keys (do_resize, size, resample, do_rescale, rescale_factor, do_normalize, image_mean, image_std, do_convert_rgb) and DeiT's do_center_crop, crop_size", k)
		}
	}
	kb, err := json.Marshal(known)
	if err != nil {
		return ProcessorConfig{}, err
	}
	cfg := DefaultProcessorConfig()
	cfg.ImageMean, cfg.ImageStd = nil, nil
	dec := json.NewDecoder(bytes.NewReader(kb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return ProcessorConfig{}, err
	}
	def := DefaultProcessorConfig()
	if _, ok := known["image_mean"]; !ok {
		cfg.ImageMean = def.ImageMean
	}
	if _, ok := known["image_std"]; !ok {
		cfg.ImageStd = def.ImageStd
	}
	if len(extra) > 0 {
		cfg.Extra = extra
	}
	if err := cfg.Validate(); err != nil {
		return ProcessorConfig{}, err
	}
	return cfg, nil
}

// Validate checks the settings: positive sizes, a known resample filter, a
// positive rescale factor, and non-empty means and non-zero stds.
func (c ProcessorConfig) Validate() error {
	if c.Size.Height <= 0 || c.Size.Width <= 0 {
		return fmt.Errorf("image processor: size %d×%d: want positive height and width", c.Size.Height, c.Size.Width)
	}
	if _, err := c.Resample.filter(); err != nil {
		return fmt.Errorf("image processor: %w", err)
	}
	if c.DoCenterCrop {
		if c.CropSize == nil || c.CropSize.Height <= 0 || c.CropSize.Width <= 0 {
			return fmt.Errorf("image processor: do_center_crop needs a crop_size with positive height and width")
		}
		if c.DoResize && (c.CropSize.Height > c.Size.Height || c.CropSize.Width > c.Size.Width) {
			return fmt.Errorf("image processor: crop_size %d×%d is larger than size %d×%d", c.CropSize.Height, c.CropSize.Width, c.Size.Height, c.Size.Width)
		}
	}
	if c.DoRescale && !(c.RescaleFactor > 0) {
		return fmt.Errorf("image processor: rescale_factor %g: want a positive factor such as 1/255", c.RescaleFactor)
	}
	if c.DoNormalize {
		for _, v := range []struct {
			key  string
			vals []float64
		}{{"image_mean", c.ImageMean}, {"image_std", c.ImageStd}} {
			if len(v.vals) == 0 {
				return fmt.Errorf("image processor: do_normalize is on but %s is empty: give one value per channel (or one for all), or turn do_normalize off", v.key)
			}
		}
		if err := CheckMeanStd(c.ImageMean, c.ImageStd); err != nil {
			return fmt.Errorf("image processor: %w", err)
		}
	}
	return nil
}

// CheckMeanStd reports an image_mean value that is not finite or an
// image_std value that is not a positive finite number, naming the key
// and index; empty lists pass (what an empty list means is the caller's).
func CheckMeanStd(mean, std []float64) error {
	for _, v := range []struct {
		key  string
		vals []float64
	}{{"image_mean", mean}, {"image_std", std}} {
		for i, x := range v.vals {
			switch {
			case math.IsNaN(x) || math.IsInf(x, 0):
				return fmt.Errorf("%s[%d] is %g: want a finite number", v.key, i, x)
			case v.key == "image_std" && x <= 0:
				return fmt.Errorf("image_std[%d] is %g: a standard deviation must be positive", i, x)
			}
		}
	}
	return nil
}

// MarshalJSON writes the known keys and the kept inert ones, sorted.
func (c ProcessorConfig) MarshalJSON() ([]byte, error) {
	type plain ProcessorConfig
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range c.Extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return json.Marshal(m) // maps marshal with sorted keys
}

// Save writes c as dir/preprocessor_config.json, atomically.
func (c ProcessorConfig) Save(dir string) error {
	if err := c.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("image processor: %w", err)
	}
	return atomicfile.WriteBytes(filepath.Join(dir, ProcessorConfigFile), append(b, '\n'))
}

// ImageProcessor turns images into a model's input pixels, as Hugging
// Face's ViTImageProcessor.preprocess does: convert to the model's
// channels, resize, (centre crop), rescale, normalise, channels first.
// It is safe for concurrent use by multiple goroutines (ImageLoader's
// workers share one): processing only reads it.
type ImageProcessor struct {
	Config   ProcessorConfig
	Channels int
	// MinSize, when positive, is the smallest side an image may have (the
	// model's patch size): ProcessFile and ImageLoader refuse smaller ones
	// with an error naming the file (see DecodeOptions.MinSize).
	MinSize int
	// lut maps a channel's 8-bit value to its rescaled, normalised float:
	// lut[c*256+v].
	lut []float32
}

// NewImageProcessor validates cfg for a model of channels (1 or 3) input
// channels: image_mean and image_std must have 1 or channels values. A
// single value serves every channel and is written out once per channel
// in the processor's Config, as Hugging Face's ViTImageProcessor needs
// (its normalize refuses a list whose length is not the channel count).
func NewImageProcessor(cfg ProcessorConfig, channels int) (*ImageProcessor, error) {
	if channels != 1 && channels != 3 {
		return nil, fmt.Errorf("image processor: %d channels: zoo converts images to 1 (grey) or 3 (RGB)", channels)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DoNormalize {
		for i, v := range [][]float64{cfg.ImageMean, cfg.ImageStd} {
			if len(v) != 1 && len(v) != channels {
				return nil, fmt.Errorf("image processor: %s has %d values for %d channels: give one per channel, or one for all", []string{"image_mean", "image_std"}[i], len(v), channels)
			}
		}
		cfg.ImageMean, cfg.ImageStd = PerChannel(cfg.ImageMean, channels), PerChannel(cfg.ImageStd, channels)
	}
	p := &ImageProcessor{Config: cfg, Channels: channels, lut: make([]float32, 256*channels)}
	for c := range channels {
		for v := range 256 {
			x := float64(v)
			if cfg.DoRescale {
				x *= cfg.RescaleFactor
			}
			if cfg.DoNormalize {
				x = (x - pick(cfg.ImageMean, c)) / pick(cfg.ImageStd, c)
			}
			p.lut[c*256+v] = float32(x)
		}
	}
	return p, nil
}

// PerChannel is v with one value per channel: a single value repeated
// channels times; other lists are returned as they are (a copy).
func PerChannel(v []float64, channels int) []float64 {
	if len(v) == 1 && channels > 1 {
		out := make([]float64, channels)
		for i := range out {
			out[i] = v[0]
		}
		return out
	}
	return slices.Clone(v)
}

func pick(v []float64, c int) float64 {
	if len(v) == 1 {
		return v[0]
	}
	return v[c]
}

// OutputSize is the height and width of Process's output: the crop size
// when centre-cropping, else Size.
func (p *ImageProcessor) OutputSize() (h, w int) {
	if p.Config.DoCenterCrop {
		return p.Config.CropSize.Height, p.Config.CropSize.Width
	}
	return p.Config.Size.Height, p.Config.Size.Width
}

// Len is the number of floats of one processed image: C·H·W.
func (p *ImageProcessor) Len() int {
	h, w := p.OutputSize()
	return p.Channels * h * w
}

// Process maps img to pixels of shape (C, H, W), row-major, with (H, W) =
// OutputSize(): resized (do_resize), centre-cropped (do_center_crop),
// converted to C channels (for C = 1 before resizing), rescaled and
// normalised. With do_resize off an
// image must already have the output size.
func (p *ImageProcessor) Process(img image.Image) ([]float32, error) {
	out := make([]float32, p.Len())
	if err := p.ProcessInto(out, img); err != nil {
		return nil, err
	}
	return out, nil
}

// ProcessInto is Process writing into dst, of length Len().
func (p *ImageProcessor) ProcessInto(dst []float32, img image.Image) error {
	var err error
	c := p.Config
	if p.Channels == 1 {
		img = toGray(img)
	}
	if c.DoResize {
		if img, err = ResizeImage(img, c.Size.Width, c.Size.Height, c.Resample); err != nil {
			return fmt.Errorf("image processor: %w", err)
		}
	}
	if c.DoCenterCrop {
		if img, err = CenterCrop(img, c.CropSize.Width, c.CropSize.Height); err != nil {
			return fmt.Errorf("image processor: %w", err)
		}
	}
	return p.TensorInto(dst, img)
}

// TensorInto converts an image already of OutputSize() to pixels of shape
// (C, H, W) in dst, of length Len(): channels, rescale and normalise, with
// no resizing. Augmentations that resize themselves call it.
func (p *ImageProcessor) TensorInto(dst []float32, img image.Image) error {
	h, w := p.OutputSize()
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		return fmt.Errorf("image processor: a %d×%d image for an input of %d×%d: turn on do_resize or resize first", b.Dx(), b.Dy(), w, h)
	}
	if len(dst) != p.Len() {
		return fmt.Errorf("image processor: %d floats for an output of %d", len(dst), p.Len())
	}
	pix, err := ImageChannels(img, p.Channels)
	if err != nil {
		return fmt.Errorf("image processor: %w", err)
	}
	hw := h * w
	for i, v := range pix {
		dst[i] = p.lut[(i/hw)*256+int(v)]
	}
	return nil
}

// ProcessFile reads the image file at path (DecodeImage, with MinSize) and
// processes it to (C, H, W); its errors name the file.
func (p *ImageProcessor) ProcessFile(path string) ([]float32, error) {
	img, err := OpenImage(path, DecodeOptions{MinSize: p.MinSize})
	if err != nil {
		return nil, err
	}
	out, err := p.Process(img)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
