package vit

import "fmt"

// Preset is a ViT configuration by name: fashion (Fashion; "" too), tiny
// (Tiny), small (Small) or base (Base). Another name is an error listing
// these.
func Preset(name string) (Config, error) {
	switch name {
	case "fashion", "":
		return Fashion(), nil
	case "tiny":
		return Tiny(), nil
	case "small":
		return Small(), nil
	case "base":
		return Base(), nil
	}
	return Config{}, fmt.Errorf("vit: preset %q: want fashion, tiny, small or base", name)
}
