package bert

import (
	"encoding/json"

	"github.com/d73a19ff/zoo/models"
)

// renamedCodec is a model type's config.json codec on a struct of its own
// keys (DistilBertConfig's, AlbertConfig's, ElectraConfig's), on Config
// (configCodec): to and from convert between the two; start, when set, is
// what reading into a Config starts from (else c's values when c is set,
// as encoding/json keeps them, and the zero T when it is not).
type renamedCodec[T any] struct {
	json  *models.Codec[T]
	to    func(Config) T
	from  func(T) Config
	start func(*Config) T
}

func (k renamedCodec[T]) startOf(c *Config) T {
	if k.start != nil {
		return k.start(c)
	}
	if c.VocabSize == 0 && c.HiddenSize == 0 && c.NumHiddenLayers == 0 {
		var zero T
		return zero
	}
	return k.to(*c)
}

func (k renamedCodec[T]) Unmarshal(b []byte, c *Config) error {
	t := k.startOf(c)
	if err := k.json.Unmarshal(b, &t); err != nil {
		return err
	}
	*c = k.from(t)
	return nil
}

func (k renamedCodec[T]) UnmarshalStrict(b []byte, c *Config, what string) error {
	t := k.startOf(c)
	if err := k.json.UnmarshalStrict(b, &t, what); err != nil {
		return err
	}
	*c = k.from(t)
	return nil
}

func (k renamedCodec[T]) Marshal(c Config, arch string) ([]byte, error) {
	return k.json.Marshal(k.to(c), arch)
}

func (k renamedCodec[T]) Saved(c Config, arch string) json.Marshaler {
	return k.json.Saved(k.to(c), arch)
}

func (k renamedCodec[T]) CheckExtra(c Config) error { return k.json.CheckExtra(k.to(c)) }
