package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/internal/jsonconfig"
)

// One codec for every family's Hugging Face config.json: gpt, bert, vit
// and vit_mae hold it in their Config under its own key names; seq2seq
// holds Marian's in a private mirror of it, which it converts to and from
// its Config. A Descriptor says what differs between them, and Codec does
// the rest.

// Alias is a config.json key that transformers reads as another, an
// entry of a config class's attribute_map: GPT-2's hidden_size sets
// n_embd.
type Alias struct {
	Alias string // the name transformers also accepts, read and never written
	Key   string // the name the family's Config models
}

// Descriptor is what one family's config.json codec knows about it.
//
// The config type T is a struct whose fields are the config.json keys the
// family computes, each named by its json tag (omitempty is honoured on
// write), plus Extra map[string]json.RawMessage (tag "-"), which holds the
// keys it keeps without modelling. Other fields tagged "-" are not
// config.json keys (another file's, such as generation_config.json): the
// codec neither reads nor writes them, and reading into a set config
// keeps them. A field tagged id2label
// (map[string]string) makes the family a classifier's: num_labels and
// _num_labels are read, and label2id is written.
type Descriptor[T any] struct {
	// Family prefixes every error: "gpt config".
	Family string
	// ModelType is the model_type written, and the only one read (absent
	// or null reads as it).
	ModelType string
	// Defaults are the values of the keys a config.json leaves out, when
	// the config read into is the zero value (transformers' defaults);
	// reading into a set config keeps its values instead, as
	// encoding/json does.
	Defaults func() T
	// Aliases are read as their Key (they must agree when both are
	// present) and never written; Extra may not hold them.
	Aliases []Alias
	// Refused are the keys whose values make transformers compute what
	// the family does not: an error naming the key when read, or in Extra
	// when written.
	Refused []Refusal
	// ZeroAsNull are int fields whose zero is JSON null (GPT-2's n_inner:
	// null means 4·n_embd). They are written after the other fields.
	ZeroAsNull []string
	// Canon, when set, is applied to a config after reading it and to the
	// copy that is written: names transformers spells another way (GPT-2's
	// activation gelu_tanh is gelu_new).
	Canon func(*T)
	// NullAsAbsent reads a null for a field as if the key were left out
	// (Marian's), instead of refusing it; a ZeroAsNull field still reads
	// null as its zero.
	NullAsAbsent bool
	// OmitDefault are fields written only when they differ from their
	// value in Defaults, as transformers' save_pretrained leaves out
	// PretrainedConfig's own defaults (Marian's tie_word_embeddings true).
	OmitDefault []string
	// Inert, when set, gives the keys, with their values for a config,
	// that the family keeps in Extra but that a config written from
	// scratch has (Marian's bos_token_id, the decoder start id): Marshal
	// writes each that Extra lacks, and Unmarshal drops from Extra one
	// that a config.json sets to its value, so that it follows the config
	// when written again. The keys may not be fields; an inert
	// architectures is kept in Extra like the others, and the arch given
	// to Marshal is not written.
	Inert func(T) map[string]any
	// SortKeys writes every key in name order, as transformers'
	// to_json_string(sort_keys=True) does, rather than the fields first.
	SortKeys bool
}

// Codec reads and writes one family's config.json as its Descriptor
// says. Every key of a config.json read is one of: a field of T (or an
// alias of one); model_type, architectures and label2id, which are checked
// and then written from what is saved; num_labels (or _num_labels), which
// without id2label names LABEL_0, LABEL_1, … as transformers does, and
// with it must agree; refused (an error naming the key, its value and what
// to do); or kept in Extra, as read, and written back after the fields in
// name order. A null for a field that cannot hold one is refused:
// transformers would read it differently from any value T can hold. A
// Codec is immutable: its methods may be called from several goroutines
// at once.
type Codec[T any] struct {
	d      Descriptor[T]
	fields []codecField
	// modeled maps the keys read or written (fields, aliases, model_type,
	// architectures and, with id2label, label2id, num_labels and
	// _num_labels) to whether JSON null is a value for them.
	modeled  map[string]bool
	extra    int // index of Extra
	id2label int // index of the id2label field, -1 without one
	// inertArch: Inert has architectures, which is then kept in Extra.
	inertArch bool
}

// codecField is one field of T that holds a config.json key.
type codecField struct {
	key         string
	index       int
	omitEmpty   bool
	zeroAsNull  bool
	omitDefault bool
}

// NewCodec builds the codec that d describes. It panics if T is not a
// struct as Descriptor says (an unexported or untagged field, no Extra),
// or if a ZeroAsNull, OmitDefault or Alias key is not one of its fields, or
// an Inert key is one: a mistake in the family's code, which its package's
// initialisation then reports.
func NewCodec[T any](d Descriptor[T]) *Codec[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("models.NewCodec: %v is not a struct", t))
	}
	c := &Codec[T]{d: d, extra: -1, id2label: -1,
		modeled: map[string]bool{"model_type": true, "architectures": true}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Name == "Extra" && tag == "-" && f.Type == reflect.TypeFor[map[string]json.RawMessage]() {
			c.extra = i
			continue
		}
		if tag == "-" && f.IsExported() {
			continue // not a config.json key: another file's (gpt's GenerationConfig)
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || f.Anonymous || name == "" || name == "-" {
			panic(fmt.Sprintf("models.NewCodec: %v.%s needs a json key name", t, f.Name))
		}
		cf := codecField{key: name, index: i, omitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"),
			zeroAsNull: slices.Contains(d.ZeroAsNull, name), omitDefault: slices.Contains(d.OmitDefault, name)}
		if cf.zeroAsNull && f.Type.Kind() != reflect.Int {
			panic(fmt.Sprintf("models.NewCodec: ZeroAsNull %s is not an int", name))
		}
		if name == "id2label" && f.Type == reflect.TypeFor[map[string]string]() {
			c.id2label = i
			for _, k := range []string{"label2id", "num_labels", "_num_labels"} {
				c.modeled[k] = true
			}
		}
		k := f.Type.Kind()
		c.modeled[name] = k == reflect.Pointer || k == reflect.Map || cf.zeroAsNull || d.NullAsAbsent
		c.fields = append(c.fields, cf)
	}
	if c.extra < 0 {
		panic(fmt.Sprintf("models.NewCodec: %v has no Extra map[string]json.RawMessage `json:\"-\"`", t))
	}
	for _, k := range d.ZeroAsNull {
		if !slices.Contains(c.fieldKeys(), k) {
			panic(fmt.Sprintf("models.NewCodec: ZeroAsNull %s is not a field of %v", k, t))
		}
	}
	for _, k := range d.OmitDefault {
		if !slices.Contains(c.fieldKeys(), k) {
			panic(fmt.Sprintf("models.NewCodec: OmitDefault %s is not a field of %v", k, t))
		}
	}
	if d.Inert != nil {
		for k := range d.Inert(d.Defaults()) {
			if slices.Contains(c.fieldKeys(), k) {
				panic(fmt.Sprintf("models.NewCodec: Inert %s is a field of %v", k, t))
			}
			if k == "architectures" {
				c.inertArch = true
				delete(c.modeled, k)
			}
		}
	}
	for _, a := range d.Aliases {
		if _, ok := c.modeled[a.Key]; !ok {
			panic(fmt.Sprintf("models.NewCodec: alias %s names %s, which is not a field of %v", a.Alias, a.Key, t))
		}
		c.modeled[a.Alias] = false
	}
	return c
}

// fieldKeys are the keys of T's fields, in T's order.
func (c *Codec[T]) fieldKeys() []string {
	keys := make([]string, len(c.fields))
	for i, f := range c.fields {
		keys[i] = f.key
	}
	return keys
}

// CheckExtra rejects cfg.Extra keys that the codec models (set the field
// instead) and refused values (see the package's CheckExtra).
func (c *Codec[T]) CheckExtra(cfg T) error {
	return CheckExtra(c.extraOf(reflect.ValueOf(&cfg).Elem()), c.modeled, c.d.Refused, c.d.Family)
}

func (c *Codec[T]) extraOf(v reflect.Value) map[string]json.RawMessage {
	return v.Field(c.extra).Interface().(map[string]json.RawMessage)
}

// Marshal writes cfg as a config.json: its fields in T's order (a
// ZeroAsNull field's zero as null, after the others; an OmitDefault field
// only when it is not its default), model_type, architectures [arch],
// label2id (inverting a non-empty id2label), then the Extra keys in name
// order, then the Inert keys that Extra lacks; with SortKeys, all of them
// in name order. Extra must pass CheckExtra.
func (c *Codec[T]) Marshal(cfg T, arch string) ([]byte, error) {
	if err := c.CheckExtra(cfg); err != nil {
		return nil, err
	}
	if c.d.Canon != nil {
		c.d.Canon(&cfg)
	}
	v := reflect.ValueOf(cfg)
	type entry struct {
		key string
		val []byte
	}
	var out []entry
	put := func(key string, x any) error {
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		out = append(out, entry{key, b})
		return nil
	}
	var def reflect.Value
	if len(c.d.OmitDefault) > 0 {
		def = reflect.ValueOf(c.d.Defaults())
	}
	for _, nulls := range []bool{false, true} {
		for _, f := range c.fields {
			fv := v.Field(f.index)
			if f.zeroAsNull != nulls || f.omitEmpty && isEmpty(fv) ||
				f.omitDefault && reflect.DeepEqual(fv.Interface(), def.Field(f.index).Interface()) {
				continue
			}
			var x any = fv.Interface()
			if f.zeroAsNull && fv.Int() == 0 {
				x = nil
			}
			if err := put(f.key, x); err != nil {
				return nil, err
			}
		}
	}
	if err := put("model_type", c.d.ModelType); err != nil {
		return nil, err
	}
	if !c.inertArch {
		if err := put("architectures", []string{arch}); err != nil {
			return nil, err
		}
	}
	if c.id2label >= 0 {
		l2i, err := Label2ID(v.Field(c.id2label).Interface().(map[string]string), c.d.Family)
		if err != nil {
			return nil, err
		}
		if len(l2i) > 0 {
			if err := put("label2id", l2i); err != nil {
				return nil, err
			}
		}
	}
	extra := c.extraOf(v)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if !json.Valid(extra[k]) {
			return nil, fmt.Errorf("%s: Extra[%q] is not valid JSON", c.d.Family, k)
		}
		out = append(out, entry{k, extra[k]})
	}
	if c.d.Inert != nil {
		inert := c.d.Inert(cfg)
		for _, k := range slices.Sorted(maps.Keys(inert)) {
			if _, ok := extra[k]; !ok {
				if err := put(k, inert[k]); err != nil {
					return nil, err
				}
			}
		}
	}
	if c.d.SortKeys {
		slices.SortStableFunc(out, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, e := range out {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(e.key)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(e.val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// Saved is cfg as Marshal writes it with architectures [arch]: what a
// family's Save passes to SaveModel, naming the head it saved.
func (c *Codec[T]) Saved(cfg T, arch string) json.Marshaler { return saved[T]{c, cfg, arch} }

type saved[T any] struct {
	c    *Codec[T]
	cfg  T
	arch string
}

func (s saved[T]) MarshalJSON() ([]byte, error) { return s.c.Marshal(s.cfg, s.arch) }

// Unmarshal reads the config.json b into *cfg as the Codec doc describes.
// Keys b leaves out keep *cfg's values when it is already set, as
// encoding/json does, and otherwise take the Descriptor's Defaults. Keys
// match exactly, as transformers reads them: Vocab_Size is not vocab_size
// and is kept in Extra. On error *cfg is unchanged.
func (c *Codec[T]) Unmarshal(b []byte, cfg *T) error {
	fam := c.d.Family
	start := c.d.Defaults()
	sv := reflect.ValueOf(&start).Elem()
	if cv := reflect.ValueOf(cfg).Elem(); !cv.IsZero() {
		start = *cfg // its maps are copied, so that *cfg's are left as they are
		sv.Field(c.extra).Set(reflect.ValueOf(maps.Clone(c.extraOf(cv))))
		if c.id2label >= 0 {
			sv.Field(c.id2label).Set(reflect.ValueOf(maps.Clone(cv.Field(c.id2label).Interface().(map[string]string))))
		}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		return fmt.Errorf("%s: null is not a config", fam)
	}
	for _, a := range c.d.Aliases {
		v, ok := raw[a.Alias]
		if !ok {
			continue
		}
		if w, ok := raw[a.Key]; ok && !sameJSON(v, w) {
			return fmt.Errorf("%s: %s %s and its alias %s %s disagree (transformers uses %s): remove one",
				fam, a.Key, CompactJSON(w), a.Alias, CompactJSON(v), a.Alias)
		}
		raw[a.Key] = v
		delete(raw, a.Alias)
	}
	if err := CheckRefused(raw, c.d.Refused, fam); err != nil {
		return err
	}
	if err := checkNotNull(raw, c.modeled, fam); err != nil {
		return err
	}
	for _, f := range c.fields {
		v, ok := raw[f.key]
		if !ok {
			continue
		}
		dst := sv.Field(f.index)
		if f.zeroAsNull && isNull(v) {
			dst.SetInt(0)
			continue
		}
		if c.d.NullAsAbsent && isNull(v) {
			continue
		}
		if err := json.Unmarshal(v, dst.Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %s: %w", fam, f.key, err)
		}
	}
	// Written from what is saved, but read for their types, as
	// transformers does.
	var mt string
	written := map[string]any{"model_type": &mt}
	if !c.inertArch {
		written["architectures"] = new([]string)
	}
	if c.id2label >= 0 {
		written["label2id"] = new(map[string]int)
	}
	for _, k := range slices.Sorted(maps.Keys(written)) {
		if v, ok := raw[k]; ok {
			if err := json.Unmarshal(v, written[k]); err != nil {
				return fmt.Errorf("%s: %s: %w", fam, k, err)
			}
		}
	}
	if mt != "" && mt != c.d.ModelType {
		return fmt.Errorf("%s: model_type %q is not %s", fam, mt, c.d.ModelType)
	}
	if c.d.Canon != nil {
		c.d.Canon(&start)
	}
	if c.id2label >= 0 {
		f := sv.Field(c.id2label)
		l, err := readNumLabels(raw, f.Interface().(map[string]string), fam)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(l))
	}
	extra := keepExtra(raw, c.modeled, c.extraOf(sv))
	if c.d.Inert != nil {
		for k, x := range c.d.Inert(start) {
			if v, ok := raw[k]; ok && jsonconfig.Same(v, x) {
				delete(extra, k)
				if len(extra) == 0 {
					extra = nil
				}
			}
		}
	}
	sv.Field(c.extra).Set(reflect.ValueOf(extra))
	*cfg = start
	return nil
}

// UnmarshalStrict is Unmarshal for a section of a pipeline's own config
// file, written by hand: a key that is not one of T's fields or
// model_type is an error listing them (what is the section, "a BERT model
// section"), so that a typo is refused rather than kept in Extra and
// written into config.json.
func (c *Codec[T]) UnmarshalStrict(b []byte, cfg *T, what string) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	fields := append(c.fieldKeys(), "model_type")
	slices.Sort(fields)
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !slices.Contains(fields, k) {
			return fmt.Errorf("unknown key %q: %s has %s", k, what, strings.Join(fields, ", "))
		}
	}
	return c.Unmarshal(b, cfg)
}

func isNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

// sameJSON reports whether a and b are JSON texts of one value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
