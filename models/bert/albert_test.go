package bert

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// albertHub is albert-base-v2's config.json as the Hub has it (with the
// original TF ALBERT's keys transformers does not read, which are kept).
const albertHub = `{"architectures": ["AlbertForMaskedLM"], "attention_probs_dropout_prob": 0, "bos_token_id": 2,
	"classifier_dropout_prob": 0.1, "down_scale_factor": 1, "embedding_size": 128, "eos_token_id": 3, "gap_size": 0,
	"hidden_act": "gelu_new", "hidden_dropout_prob": 0, "hidden_size": 768, "initializer_range": 0.02, "inner_group_num": 1,
	"intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "albert",
	"net_structure_type": 0, "num_attention_heads": 12, "num_hidden_groups": 1, "num_hidden_layers": 12,
	"num_memory_blocks": 0, "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": 30000}`

func TestAlbertConfig(t *testing.T) {
	c := AlbertBase()
	require.NoError(t, c.Validate())
	require.EqualValues(t, 11683584, c.NumParams(), "albert-base-v2's AlbertModel")
	m, err := New(c, layers.WithSeed(1))
	require.NoError(t, err)
	require.EqualValues(t, c.NumParams(), m.NumParams(), "NumParams counts what New allocates")
	require.Equal(t, []int{30000, 128}, []int(m.WordEmbeddings.Weight.Value.Shape()))
	require.Equal(t, "albert.pooler.weight", m.Pooler.Weight.Name)
	require.Equal(t, "albert.encoder.embedding_hidden_mapping_in.weight", m.EmbeddingsProject.Weight.Name)
	require.Len(t, m.Encoder.Layers, 12)
	for _, b := range m.Encoder.Layers {
		require.Same(t, m.Encoder.Layers[0], b, "albert-base-v2's 12 layers share one")
	}

	// albert-base-v2's config.json is AlbertBase; TF ALBERT's keys, which
	// transformers does not read, are kept; bos and eos are inert.
	var hub Config
	require.NoError(t, json.Unmarshal([]byte(albertHub), &hub))
	want := AlbertBase()
	want.Extra = hub.Extra
	require.Equal(t, want, hub)
	require.Equal(t, []string{"down_scale_factor", "gap_size", "net_structure_type", "num_memory_blocks"}, sorted(keysOf(hub.Extra)))
	require.Equal(t, 0.1, *hub.ClassifierDropout, "classifier_dropout_prob")

	// Written under AlbertConfig's names, and read back equal.
	b, err := json.Marshal(hub)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	for k, v := range map[string]any{"embedding_size": 128.0, "num_hidden_groups": 1.0, "inner_group_num": 1.0, "classifier_dropout_prob": 0.1,
		"bos_token_id": 2.0, "eos_token_id": 3.0, "model_type": "albert", "hidden_act": "gelu_new"} {
		require.Equal(t, v, raw[k], k)
	}
	require.NotContains(t, raw, "classifier_dropout", "BertConfig's name is not written")
	var back Config
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, hub, back)

	// A strict model section reads AlbertConfig's names and refuses others.
	var s Config
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "albert", "embedding_size": 16, "num_hidden_groups": 2, "num_hidden_layers": 4}`), Strict(&s)))
	require.Equal(t, AlbertModelType, s.ModelType)
	require.Equal(t, 16, s.EmbeddingSize)
	require.Equal(t, 2, s.NumHiddenGroups)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"model_type": "albert", "embeding_size": 16}`), Strict(&s)), `unknown key "embeding_size"`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"model_type": "albert", "gap_size": 0}`), Strict(&s)), `"gap_size"`)

	for _, bad := range []struct{ json, want string }{
		{`{"model_type": "albert", "num_hidden_layers": 5, "num_hidden_groups": 2}`, "albert config: num_hidden_layers 5 is not a multiple of num_hidden_groups 2"},
		{`{"model_type": "albert", "num_hidden_groups": 0}`, "num_hidden_groups"},
		{`{"model_type": "albert", "inner_group_num": 0}`, "inner_group_num"},
		{`{"model_type": "albert", "embedding_size": 0}`, "embedding_size"},
		{`{"model_type": "albert", "num_hidden_layers": 100000, "inner_group_num": 100000}`, "num_hidden_layers"},
		{`{"model_type": "albert", "is_decoder": true}`, "is_decoder"},
		{`{"model_type": "albert", "tie_word_embeddings": false}`, "tie_word_embeddings"},
		{`{"model_type": "albert", "position_embedding_type": "relative_key"}`, "position_embedding_type"},
		{`{"model_type": "albert", "classifier_dropout_prob": 1.5}`, "albert config: classifier_dropout_prob 1.5 must be in [0, 1)"},
		{`{"model_type": "albert", "hidden_act": "swishy"}`, "albert config: hidden_act"},
	} {
		var c Config
		err := json.Unmarshal([]byte(bad.json), &c)
		if err == nil {
			err = c.Validate()
		}
		require.ErrorContains(t, err, bad.want, bad.json)
	}
	// ALBERT's fields on another model type are a mistake.
	bc := Tiny()
	bc.EmbeddingSize = 64
	require.ErrorContains(t, bc.Validate(), `embedding_size 64: only an ALBERT or an ELECTRA (model_type "albert", "electra") has an embedding_size of its own`)
	bc = Tiny()
	bc.EmbeddingSize = bc.HiddenSize // even an equal one: one check, one message
	require.ErrorContains(t, bc.Validate(), `only an ALBERT or an ELECTRA (model_type "albert", "electra") has an embedding_size of its own`)
	bc = Tiny()
	bc.NumHiddenGroups = 2
	require.ErrorContains(t, bc.Validate(), "num_hidden_groups 2, inner_group_num 0 are ALBERT's")
	var nul Config // classifier_dropout_prob null: the token classifier's dropout is hidden_dropout_prob
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "albert", "classifier_dropout_prob": null, "hidden_dropout_prob": 0.2}`), &nul))
	require.Nil(t, nul.ClassifierDropout)
	require.Equal(t, 0.2, nul.classifierDropout())
}

// What zoo saves from each ALBERT head has exactly the keys and shapes of
// the reference's save_pretrained (so transformers' AlbertFor… loads it
// strictly: tools/pytorch/albert_reference.py --check), config.json names
// the class under AlbertConfig's keys, and it loads back strictly.
func TestAlbertSaveKeys(t *testing.T) {
	for _, cfg := range []string{"g1", "g2i2"} {
		for _, head := range []string{"pretrain", "mlm", "seq", "token", "qa"} {
			t.Run(cfg+"/"+head, func(t *testing.T) {
				dir := filepath.Join("testdata", "albert", cfg, head)
				m, save, _, _, _ := variantHead(t, "albert/"+cfg, head, tensor.Float32, true)
				out := requireSavedAs(t, dir, save)
				want, got := requireConfigAs(t, dir, out, "albert")
				requireConfigKeys(t, want, got)
				back, r, err := Load(out)
				require.NoError(t, err)
				if m.Pooler == nil { // AlbertForMaskedLM, …Token…, …QuestionAnswering: add_pooling_layer=False
					require.Equal(t, []string{"albert.pooler.bias", "albert.pooler.weight"}, sorted(r.Created))
				} else {
					require.Empty(t, r.Created)
				}
				name := "albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"
				a, _ := m.Store.Param(name)
				z, ok := back.Store.Param(name)
				require.True(t, ok, name)
				require.Equal(t, a.Value.Data(), z.Value.Data(), name)
			})
		}
	}
}

// A checkpoint of one ALBERT head fits another: the pretraining heads
// dropped and a new classifier created; a masked LM (no pooler) gives a
// sequence classifier a new albert.pooler; the pretraining checkpoint's
// pooler is dropped by the token classifier; strict loading across heads
// fails.
func TestAlbertLoadAcrossHeads(t *testing.T) {
	dir := func(head string) string { return filepath.Join("testdata", "albert", "g2i2", head) }
	c, r, err := LoadForSequenceClassification(dir("pretrain"), models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.True(t, r.NewHead)
	require.Equal(t, []string{"predictions.LayerNorm.bias", "predictions.LayerNorm.weight", "predictions.bias", "predictions.dense.bias", "predictions.dense.weight",
		"sop_classifier.classifier.bias", "sop_classifier.classifier.weight"}, r.Dropped)
	require.Equal(t, []string{"classifier.bias", "classifier.weight"}, sorted(r.Created))
	require.Nil(t, c.Dense)
	_, r, err = LoadForSequenceClassification(dir("mlm"), models.WithLabels("a", "b"))
	require.NoError(t, err)
	require.Equal(t, []string{"albert.pooler.bias", "albert.pooler.weight", "classifier.bias", "classifier.weight"}, sorted(r.Created))
	_, r, err = LoadForTokenClassification(dir("pretrain"), models.WithLabels("O", "B"))
	require.NoError(t, err)
	require.Contains(t, r.Dropped, "albert.pooler.weight")
	p, r, err := LoadForPreTraining(dir("mlm"))
	require.NoError(t, err)
	require.Equal(t, "sop_classifier.classifier.weight", p.NSP.Weight.Name)
	require.Equal(t, []string{"albert.pooler.bias", "albert.pooler.weight", "sop_classifier.classifier.bias", "sop_classifier.classifier.weight"}, sorted(r.Created))
	_, _, err = LoadForSequenceClassification(dir("pretrain"), models.WithLabels("a", "b"), models.Strict())
	require.Error(t, err)
	_, _, err = LoadForTokenClassification(dir("seq"))
	require.ErrorContains(t, err, "AlbertForSequenceClassification checkpoint")
}

// HiddenStates of an ALBERT are transformers' hidden_states: the input of
// the first layer (after embedding_hidden_mapping_in) and one per layer of
// num_hidden_layers, not one per inner block; the last is Hidden's output.
func TestAlbertHiddenStates(t *testing.T) {
	m, _, err := Load(filepath.Join("testdata", "albert", "g2i2", "token"), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	ids := []int{1, 5, 9, 3, 7, 13, 3}
	hs, err := m.HiddenStates(ids, nil)
	require.NoError(t, err)
	require.Len(t, hs, 4+1, "num_hidden_layers + 1, not num_hidden_layers × inner_group_num + 1")
	require.Len(t, hs[0][0], 16, "hidden_size: after the mapping from embedding_size 8")
	g := m.Store.NewGraph()
	in := Inputs{IDs: g.IntInput("ids", 1, len(ids))}
	setInts(t, in.IDs, ids)
	h, err := m.Hidden(g, in)
	require.NoError(t, err)
	vals, err := g.Evaluate(h)
	require.NoError(t, err)
	last := vals[0]
	for i := range ids {
		require.Equal(t, last[i*16:(i+1)*16], hs[4][i], "position %d", i)
	}
}

// Bad input: next-sentence prediction on the type without one is still
// refused, and ALBERT's pretraining head is sentence order.
func TestAlbertPreTrainingHead(t *testing.T) {
	c := AlbertBase()
	c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize, c.VocabSize = 2, 32, 2, 64, 50
	p, err := NewForPreTraining(c, layers.WithSeed(3))
	require.NoError(t, err)
	require.Equal(t, "sop_classifier.classifier.weight", p.NSP.Weight.Name)
	require.Equal(t, 0.1, p.pairDrop.P, "AlbertSOPHead's dropout is classifier_dropout_prob")
	require.Equal(t, []int{c.EmbeddingSize, c.HiddenSize}, []int(p.MLM.Transform.Weight.Value.Shape()), "predictions.dense maps hidden_size to embedding_size")
	require.Equal(t, "AlbertForPreTraining", p.architecture())
	b, err := NewForPreTraining(Tiny(), layers.WithSeed(3))
	require.NoError(t, err)
	require.Zero(t, b.pairDrop.P, "BERT's NSP head has no dropout")
	_, err = NewForPreTraining(RobertaBase())
	require.ErrorContains(t, err, "RoBERTa has no next-sentence prediction head")
}
