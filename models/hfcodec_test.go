package models

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// toyConfig is a family's Config in miniature: a field of each kind the
// families have (int, string, float, bool, nullable pointer, an int whose
// zero is null, omitempty, id2label) and Extra.
type toyConfig struct {
	Width    int                        `json:"width"`
	Inner    int                        `json:"inner"` // ZeroAsNull
	Act      string                     `json:"act"`
	Eps      float64                    `json:"eps"`
	Tie      bool                       `json:"tie"`
	Drop     *float64                   `json:"drop"`
	Pad      *int                       `json:"pad,omitempty"`
	ID2Label map[string]string          `json:"id2label,omitempty"`
	Extra    map[string]json.RawMessage `json:"-"`
}

func toyDefaults() toyConfig { return toyConfig{Width: 4, Act: "gelu", Eps: 1e-5, Tie: true} }

var toyCodec = NewCodec(Descriptor[toyConfig]{
	Family: "toy config", ModelType: "toy", Defaults: toyDefaults,
	Aliases: []Alias{{Alias: "hidden_size", Key: "width"}},
	Refused: []Refusal{{Key: "pruned_heads", OK: func(v any) bool { m, ok := v.(map[string]any); return v == nil || ok && len(m) == 0 },
		Why: "is not supported: use an unpruned checkpoint"}},
	ZeroAsNull: []string{"inner"},
	Canon: func(c *toyConfig) {
		if c.Act == "gelu_tanh" {
			c.Act = "gelu_new"
		}
	},
})

func (c toyConfig) MarshalJSON() ([]byte, error)  { return toyCodec.Marshal(c, "ToyModel") }
func (c *toyConfig) UnmarshalJSON(b []byte) error { return toyCodec.Unmarshal(b, c) }

// Reading: defaults, aliases, labels, kept keys and each refusal, which
// names the key.
func TestCodecUnmarshal(t *testing.T) {
	set := toyDefaults()
	set.Width, set.Extra = 9, map[string]json.RawMessage{"note": json.RawMessage(`"old"`)}
	labelled := toyDefaults()
	labelled.ID2Label = map[string]string{"0": "a"}
	for _, tc := range []struct {
		name  string
		start toyConfig
		in    string
		check func(t *testing.T, c toyConfig)
		err   string
	}{
		{name: "defaults for absent keys", in: `{}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, toyDefaults(), c)
		}},
		{name: "a set config keeps what is absent", start: set, in: `{"act":"relu"}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, 9, c.Width)
			require.Equal(t, "relu", c.Act)
			require.Equal(t, map[string]json.RawMessage{"note": json.RawMessage(`"old"`)}, c.Extra)
		}},
		{name: "fields", in: `{"width":8,"inner":32,"eps":1e-12,"tie":false,"drop":0.25,"pad":0}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, 8, c.Width)
			require.Equal(t, 32, c.Inner)
			require.Equal(t, 1e-12, c.Eps)
			require.False(t, c.Tie)
			require.Equal(t, 0.25, *c.Drop)
			require.Equal(t, 0, *c.Pad)
			require.Nil(t, c.Extra)
		}},
		{name: "model_type of the family, or null", in: `{"model_type":"toy","architectures":["ToyModel"]}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, toyDefaults(), c)
		}},
		{name: "model_type null", in: `{"model_type":null}`, check: func(t *testing.T, c toyConfig) { require.Equal(t, toyDefaults(), c) }},
		{name: "model_type of another family", in: `{"model_type":"bert"}`, err: `toy config: model_type "bert" is not toy`},
		{name: "refused key named with its value", in: `{"pruned_heads":{"0":[1, 2]}}`,
			err: `toy config: pruned_heads {"0":[1,2]} is not supported: use an unpruned checkpoint`},
		{name: "refused key's accepted value is kept", in: `{"pruned_heads":{}}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, map[string]json.RawMessage{"pruned_heads": json.RawMessage(`{}`)}, c.Extra)
		}},
		{name: "unknown key kept as read", in: `{"use_cache": [true, 1]}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, map[string]json.RawMessage{"use_cache": json.RawMessage(`[true, 1]`)}, c.Extra)
		}},
		{name: "keys match exactly, as transformers reads them", in: `{"Width":7}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, 4, c.Width)
			require.Equal(t, map[string]json.RawMessage{"Width": json.RawMessage(`7`)}, c.Extra)
		}},
		{name: "alias sets its key", in: `{"hidden_size":16}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, 16, c.Width)
			require.Nil(t, c.Extra)
		}},
		{name: "alias agreeing with its key", in: `{"hidden_size":16,"width":16}`, check: func(t *testing.T, c toyConfig) { require.Equal(t, 16, c.Width) }},
		{name: "alias disagreeing with its key", in: `{"hidden_size":16,"width":8}`,
			err: "toy config: width 8 and its alias hidden_size 16 disagree (transformers uses hidden_size): remove one"},
		{name: "num_labels names labels", in: `{"num_labels":2}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, map[string]string{"0": "LABEL_0", "1": "LABEL_1"}, c.ID2Label)
			require.Nil(t, c.Extra)
		}},
		{name: "num_labels agreeing with id2label", in: `{"num_labels":1,"id2label":{"0":"x"},"label2id":{"x":0}}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, map[string]string{"0": "x"}, c.ID2Label)
			require.Nil(t, c.Extra)
		}},
		{name: "id2label merges into a set config's, which is left as it was", start: labelled, in: `{"id2label":{"1":"b"}}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, map[string]string{"0": "a", "1": "b"}, c.ID2Label)
			require.Equal(t, map[string]string{"0": "a"}, labelled.ID2Label)
		}},
		{name: "num_labels disagreeing with id2label", in: `{"num_labels":3,"id2label":{"0":"x"}}`,
			err: "toy config: num_labels 3 disagrees with the 1 labels of id2label"},
		{name: "null where the field cannot hold it", in: `{"width":null}`,
			err: "toy config: width is null: transformers would read null differently from any value zoo can hold; write the value"},
		{name: "null alias", in: `{"hidden_size":null}`, err: "toy config: width is null"},
		{name: "null pointer", in: `{"drop":null}`, check: func(t *testing.T, c toyConfig) { require.Nil(t, c.Drop) }},
		{name: "zero as null", start: toyConfig{Inner: 5, Width: 1}, in: `{"inner":null}`, check: func(t *testing.T, c toyConfig) {
			require.Equal(t, 0, c.Inner)
			require.Equal(t, 1, c.Width)
		}},
		{name: "wrong type names the key", in: `{"width":"wide"}`, err: "toy config: width: json: cannot unmarshal string"},
		{name: "written keys are read for their type", in: `{"architectures":"ToyModel"}`, err: "toy config: architectures: json: cannot unmarshal"},
		{name: "label2id's type", in: `{"label2id":{"x":"0"}}`, err: "toy config: label2id: json: cannot unmarshal"},
		{name: "canonical names", in: `{"act":"gelu_tanh"}`, check: func(t *testing.T, c toyConfig) { require.Equal(t, "gelu_new", c.Act) }},
		{name: "null is not a config", in: `null`, err: "toy config: null is not a config"},
		{name: "not an object", in: `[]`, err: "json: cannot unmarshal array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.start
			before := c
			err := json.Unmarshal([]byte(tc.in), &c)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Equal(t, before, c, "a config that does not read is left as it was")
				return
			}
			require.NoError(t, err)
			tc.check(t, c)
		})
	}
}

// Writing: fields in order, a ZeroAsNull zero as null after them,
// model_type, architectures, label2id, then Extra in name order; Extra
// may not hold what the codec models or refuses.
func TestCodecMarshal(t *testing.T) {
	drop := 0.5
	for _, tc := range []struct {
		name string
		c    toyConfig
		want string
		err  string
	}{
		{name: "defaults", c: toyDefaults(),
			want: `{"width":4,"act":"gelu","eps":0.00001,"tie":true,"drop":null,"inner":null,"model_type":"toy","architectures":["ToyModel"]}`},
		{name: "every field", c: toyConfig{Width: 2, Inner: 8, Act: "gelu_tanh", Eps: 1e-12, Drop: &drop, Pad: new(int),
			ID2Label: map[string]string{"1": "pos", "0": "neg"}, Extra: map[string]json.RawMessage{"z": json.RawMessage(`1`), "a": json.RawMessage(`{"k": 2}`)}},
			want: `{"width":2,"act":"gelu_new","eps":1e-12,"tie":false,"drop":0.5,"pad":0,"id2label":{"0":"neg","1":"pos"},"inner":8,` +
				`"model_type":"toy","architectures":["ToyModel"],"label2id":{"neg":0,"pos":1},"a":{"k":2},"z":1}`},
		{name: "Extra holding a field", c: toyConfig{Extra: map[string]json.RawMessage{"width": json.RawMessage(`3`)}},
			err: `toy config: Extra has "width", which Config models: set the field instead`},
		{name: "Extra holding an alias", c: toyConfig{Extra: map[string]json.RawMessage{"hidden_size": json.RawMessage(`3`)}},
			err: `toy config: Extra has "hidden_size"`},
		{name: "Extra holding label2id", c: toyConfig{Extra: map[string]json.RawMessage{"label2id": json.RawMessage(`{}`)}},
			err: `toy config: Extra has "label2id"`},
		{name: "Extra holding a refused value", c: toyConfig{Extra: map[string]json.RawMessage{"pruned_heads": json.RawMessage(`{"0":[1]}`)}},
			err: `toy config: pruned_heads {"0":[1]} is not supported`},
		{name: "Extra that is not JSON", c: toyConfig{Extra: map[string]json.RawMessage{"x": json.RawMessage(`{`)}},
			err: `toy config: Extra["x"] is not valid JSON`},
		{name: "id2label keys not integers", c: toyConfig{ID2Label: map[string]string{"x": "a"}},
			err: `toy config: id2label key "x" is not an integer`},
		{name: "NaN", c: toyConfig{Eps: math.NaN()}, err: "json: unsupported value: NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.c)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
		})
	}
}

// What Marshal writes is what encoding/json writes for the fields (the
// families' configs were marshalled so, and their files must not change),
// and it reads back to the same config and the same bytes.
func TestCodecMarshalIsEncodingJSON(t *testing.T) {
	type plain struct {
		Width    int               `json:"width"`
		Act      string            `json:"act"`
		Eps      float64           `json:"eps"`
		Tie      bool              `json:"tie"`
		Drop     *float64          `json:"drop"`
		Pad      *int              `json:"pad,omitempty"`
		ID2Label map[string]string `json:"id2label,omitempty"`
		Inner    *int              `json:"inner"`
		Type     string            `json:"model_type"`
		Arch     []string          `json:"architectures"`
		L2I      map[string]int    `json:"label2id,omitempty"`
	}
	drop, pad, inner := 1e-7, 3, 7
	for _, c := range []toyConfig{
		toyDefaults(),
		{Width: math.MaxInt32, Act: `<&> "quoted" é`, Eps: 123456789.125, Drop: &drop, Pad: &pad, Inner: inner,
			ID2Label: map[string]string{"0": "<a>", "1": "b&c"}},
		{Eps: 1e21, Act: "\u2028"},
	} {
		got, err := json.Marshal(c)
		require.NoError(t, err)
		p := plain{Width: c.Width, Act: c.Act, Eps: c.Eps, Tie: c.Tie, Drop: c.Drop, Pad: c.Pad, ID2Label: c.ID2Label,
			Type: "toy", Arch: []string{"ToyModel"}}
		if c.Inner != 0 {
			p.Inner = &c.Inner
		}
		p.L2I, err = Label2ID(c.ID2Label, "toy config")
		require.NoError(t, err)
		want, err := json.Marshal(p)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))

		var back toyConfig
		require.NoError(t, json.Unmarshal(got, &back))
		require.Equal(t, c, back)
		again, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(got), string(again))
	}
}

// An inert key and a refused key's accepted value are written back
// exactly as read; the alias is written under its key.
func TestCodecRoundTripKeepsExtra(t *testing.T) {
	in := `{"hidden_size":6,"torch_dtype":"float32","pruned_heads":{},"task_specific_params":{"b": [1, 2.50]}}`
	var c toyConfig
	require.NoError(t, json.Unmarshal([]byte(in), &c))
	b, err := toyCodec.Marshal(c, "ToyForThings")
	require.NoError(t, err)
	require.Equal(t, `{"width":6,"act":"gelu","eps":0.00001,"tie":true,"drop":null,"inner":null,"model_type":"toy","architectures":["ToyForThings"],`+
		`"pruned_heads":{},"task_specific_params":{"b": [1, 2.50]},"torch_dtype":"float32"}`, string(b))
	// What SaveModel writes: encoding/json compacts a Marshaler's output.
	saved, err := json.Marshal(toyCodec.Saved(c, "ToyForThings"))
	require.NoError(t, err)
	require.Equal(t, CompactJSON(b), string(saved))
}

// UnmarshalStrict refuses a key that is not a field, naming the fields.
func TestCodecUnmarshalStrict(t *testing.T) {
	c := toyDefaults()
	require.NoError(t, toyCodec.UnmarshalStrict([]byte(`{"width":3,"model_type":"toy"}`), &c, "a toy section"))
	require.Equal(t, 3, c.Width)
	for _, in := range []string{`{"widht":3}`, `{"hidden_size":3}`, `{"num_labels":2}`} {
		err := toyCodec.UnmarshalStrict([]byte(in), &c, "a toy section")
		require.ErrorContains(t, err, `: a toy section has act, drop, eps, id2label, inner, model_type, pad, tie, width`)
		require.True(t, strings.HasPrefix(err.Error(), "unknown key "), err)
	}
	require.Equal(t, 3, c.Width)
}

// The keys a codec models: fields, aliases, the written keys and the
// labels' keys, with whether null is a value.
func TestCodecModeled(t *testing.T) {
	require.Equal(t, map[string]bool{"width": false, "inner": true, "act": false, "eps": false, "tie": false, "drop": true, "pad": true,
		"id2label": true, "label2id": true, "num_labels": true, "_num_labels": true, "model_type": true, "architectures": true,
		"hidden_size": false}, toyCodec.modeled)
	require.Equal(t, []string{"width", "inner", "act", "eps", "tie", "drop", "pad", "id2label"}, toyCodec.fieldKeys())

	// Without id2label, a family keeps num_labels and label2id in Extra.
	type noLabels struct {
		N     int                        `json:"n"`
		Extra map[string]json.RawMessage `json:"-"`
	}
	c := NewCodec(Descriptor[noLabels]{Family: "nl config", ModelType: "nl", Defaults: func() noLabels { return noLabels{N: 1} }})
	var v noLabels
	require.NoError(t, c.Unmarshal([]byte(`{"num_labels":2,"label2id":{"a":"b"}}`), &v))
	require.Equal(t, noLabels{N: 1, Extra: map[string]json.RawMessage{"num_labels": json.RawMessage(`2`), "label2id": json.RawMessage(`{"a":"b"}`)}}, v)
	b, err := c.Marshal(v, "NL")
	require.NoError(t, err)
	require.Equal(t, `{"n":1,"model_type":"nl","architectures":["NL"],"label2id":{"a":"b"},"num_labels":2}`, string(b))
}

// A field tagged "-" other than Extra is another file's: the codec
// neither reads nor writes it, and reading into a set config keeps it.
func TestCodecSkipsOtherFiles(t *testing.T) {
	type withFile struct {
		N     int                        `json:"n"`
		File  json.RawMessage            `json:"-"`
		Extra map[string]json.RawMessage `json:"-"`
	}
	c := NewCodec(Descriptor[withFile]{Family: "wf config", ModelType: "wf", Defaults: func() withFile { return withFile{N: 1} }})
	v := withFile{N: 2, File: json.RawMessage(`{"a": 1}`)}
	b, err := c.Marshal(v, "WF")
	require.NoError(t, err)
	require.Equal(t, `{"n":2,"model_type":"wf","architectures":["WF"]}`, string(b))
	require.NoError(t, c.Unmarshal([]byte(`{"n": 3, "File": {"b": 2}}`), &v))
	require.Equal(t, withFile{N: 3, File: json.RawMessage(`{"a": 1}`), Extra: map[string]json.RawMessage{"File": json.RawMessage(`{"b": 2}`)}}, v)
}

// A config type the codec cannot handle is the family's mistake, found
// when its package initialises.
func TestNewCodecRefusesBadTypes(t *testing.T) {
	type noExtra struct {
		N int `json:"n"`
	}
	type untagged struct {
		N     int
		Extra map[string]json.RawMessage `json:"-"`
	}
	type ok struct {
		N     int                        `json:"n"`
		Extra map[string]json.RawMessage `json:"-"`
	}
	require.PanicsWithValue(t, "models.NewCodec: models.noExtra has no Extra map[string]json.RawMessage `json:\"-\"`", func() {
		NewCodec(Descriptor[noExtra]{})
	})
	require.Panics(t, func() { NewCodec(Descriptor[untagged]{}) })
	require.Panics(t, func() { NewCodec(Descriptor[int]{}) })
	require.Panics(t, func() { NewCodec(Descriptor[ok]{ZeroAsNull: []string{"m"}}) })
	require.Panics(t, func() { NewCodec(Descriptor[ok]{Aliases: []Alias{{Alias: "x", Key: "m"}}}) })
	require.NotPanics(t, func() { NewCodec(Descriptor[ok]{ZeroAsNull: []string{"n"}, Aliases: []Alias{{Alias: "x", Key: "n"}}}) })
	okDefaults := func() ok { return ok{} }
	require.Panics(t, func() { NewCodec(Descriptor[ok]{Defaults: okDefaults, OmitDefault: []string{"m"}}) })
	require.PanicsWithValue(t, "models.NewCodec: Inert n is a field of models.ok", func() {
		NewCodec(Descriptor[ok]{Defaults: okDefaults, Inert: func(ok) map[string]any { return map[string]any{"n": 1} }})
	})
	require.NotPanics(t, func() {
		NewCodec(Descriptor[ok]{Defaults: okDefaults, OmitDefault: []string{"n"}, Inert: func(ok) map[string]any { return map[string]any{"m": 1} }})
	})
}

// marianToy is a config like Marian's: null reads as absent, keys are
// sorted, tie is written only when it is not its default, and start (with
// architectures) is inert.
type marianToy struct {
	Width int                        `json:"width"`
	Start int                        `json:"start"`
	Tie   bool                       `json:"tie"`
	Pad   *int                       `json:"pad,omitempty"`
	Extra map[string]json.RawMessage `json:"-"`
}

var marianToyCodec = NewCodec(Descriptor[marianToy]{
	Family: "mt config", ModelType: "mt", Defaults: func() marianToy { return marianToy{Width: 4, Start: 1, Tie: true} },
	NullAsAbsent: true, SortKeys: true, OmitDefault: []string{"tie"},
	Inert: func(c marianToy) map[string]any {
		return map[string]any{"architectures": []string{"MTModel"}, "bos": c.Start, "init_std": 0.02}
	},
})

// The hooks a Marian-like family needs: NullAsAbsent, SortKeys,
// OmitDefault and Inert, the last with architectures among its keys.
func TestCodecMarianHooks(t *testing.T) {
	five := 5
	for _, tc := range []struct {
		name, in string
		start    marianToy
		want     marianToy
		out      string
	}{
		{name: "from scratch: inert keys written, tie left out, all sorted", in: `{}`,
			want: marianToy{Width: 4, Start: 1, Tie: true},
			out:  `{"architectures":["MTModel"],"bos":1,"init_std":0.02,"model_type":"mt","start":1,"width":4}`},
		{name: "null is absent", in: `{"width":null,"tie":null,"pad":null}`, start: marianToy{Width: 7, Start: 2, Pad: &five},
			want: marianToy{Width: 7, Start: 2, Pad: &five},
			out:  `{"architectures":["MTModel"],"bos":2,"init_std":0.02,"model_type":"mt","pad":5,"start":2,"tie":false,"width":7}`},
		{name: "inert keys at their value are dropped and follow the config", in: `{"start":3,"bos":3,"architectures":["MTModel"],"init_std":0.02}`,
			want: marianToy{Width: 4, Start: 3, Tie: true},
			out:  `{"architectures":["MTModel"],"bos":3,"init_std":0.02,"model_type":"mt","start":3,"width":4}`},
		{name: "inert keys at other values are kept; architectures is not checked", in: `{"bos":0,"architectures":"Other","z":[1, 2]}`,
			want: marianToy{Width: 4, Start: 1, Tie: true, Extra: map[string]json.RawMessage{
				"bos": json.RawMessage(`0`), "architectures": json.RawMessage(`"Other"`), "z": json.RawMessage(`[1, 2]`)}},
			out: `{"architectures":"Other","bos":0,"init_std":0.02,"model_type":"mt","start":1,"width":4,"z":[1, 2]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.start
			require.NoError(t, marianToyCodec.Unmarshal([]byte(tc.in), &c))
			require.Equal(t, tc.want, c)
			b, err := marianToyCodec.Marshal(c, "Ignored")
			require.NoError(t, err)
			require.Equal(t, tc.out, string(b))
		})
	}
	require.Equal(t, map[string]bool{"width": true, "start": true, "tie": true, "pad": true, "model_type": true}, marianToyCodec.modeled,
		"null reads as absent for every field; architectures is inert")
}
