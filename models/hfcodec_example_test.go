package models_test

import (
	"encoding/json"
	"fmt"

	"github.com/d73a19ff/zoo/models"
)

// TinyConfig is a family's Config: its fields are the config.json keys it
// computes, and Extra keeps the rest.
type TinyConfig struct {
	Width    int                        `json:"width"`
	Act      string                     `json:"act"`
	ID2Label map[string]string          `json:"id2label,omitempty"`
	Extra    map[string]json.RawMessage `json:"-"`
}

// tinyCodec is the family's descriptor, made once.
var tinyCodec = models.NewCodec(models.Descriptor[TinyConfig]{
	Family:    "tiny config",
	ModelType: "tiny",
	Defaults:  func() TinyConfig { return TinyConfig{Width: 768, Act: "gelu"} },
	Aliases:   []models.Alias{{Alias: "hidden_size", Key: "width"}},
	Refused: []models.Refusal{{Key: "is_decoder", OK: func(v any) bool { return v == nil || v == false },
		Why: "is not supported: tiny is an encoder; use an encoder's checkpoint"}},
})

// The family's codec is then two one-line methods.
func (c TinyConfig) MarshalJSON() ([]byte, error)  { return tinyCodec.Marshal(c, "TinyModel") }
func (c *TinyConfig) UnmarshalJSON(b []byte) error { return tinyCodec.Unmarshal(b, c) }

// One family's config.json through the generic codec: defaults for what
// is absent, an alias, labels from num_labels, an inert key kept and
// written back, and the refusals, each naming the key.
func ExampleNewCodec() {
	var c TinyConfig
	err := json.Unmarshal([]byte(`{"model_type":"tiny","hidden_size":128,"num_labels":2,"torch_dtype":"float32"}`), &c)
	fmt.Println(c.Width, c.Act, c.ID2Label, string(c.Extra["torch_dtype"]), err)

	b, err := json.Marshal(c)
	fmt.Println(string(b), err)

	for _, in := range []string{
		`{"model_type":"bert"}`,
		`{"is_decoder":true}`,
		`{"width":null}`,
		`{"width":"wide"}`,
		`{"width":128,"hidden_size":64}`,
	} {
		fmt.Println(json.Unmarshal([]byte(in), &c))
	}
	// Output:
	// 128 gelu map[0:LABEL_0 1:LABEL_1] "float32" <nil>
	// {"width":128,"act":"gelu","id2label":{"0":"LABEL_0","1":"LABEL_1"},"model_type":"tiny","architectures":["TinyModel"],"label2id":{"LABEL_0":0,"LABEL_1":1},"torch_dtype":"float32"} <nil>
	// tiny config: model_type "bert" is not tiny
	// tiny config: is_decoder true is not supported: tiny is an encoder; use an encoder's checkpoint
	// tiny config: width is null: transformers would read null differently from any value zoo can hold; write the value
	// tiny config: width: json: cannot unmarshal string into Go value of type int
	// tiny config: width 128 and its alias hidden_size 64 disagree (transformers uses hidden_size): remove one
}
