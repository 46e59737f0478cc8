// Package models is what every model family shares, and the seams the
// shared pipelines cut along:
//
//   - the checkpoint bundle (bundle.go): one directory layout for every
//     family, in Hugging Face's form: config.json with model_type,
//     model.safetensors with Hugging Face's tensor names, tokenizer.json or
//     preprocessor_config.json, and the training state;
//   - the config.json codec (hfcodec.go): one reader and writer of a
//     family's Hugging Face config, which a Descriptor per family tunes
//     (defaults, model_type, aliases, refused keys, labels), keeping the
//     keys a family does not model so they are written back as read;
//   - the registry of families (family.go), keyed by config.json's
//     model_type, so that a checkpoint says which family reads it;
//   - the sequence-classifier seam (classifier.go): a backbone that pools a
//     sequence and a head that scores classes, so one fine-tuning pipeline
//     serves every family;
//   - the one loader shape (loadopt.go, report.go): every family's Load
//     functions are LoadX(dir string, opts ...LoadOption) (*X, LoadReport,
//     error), with one option type shared by all families, LoadOption, rather than
//     one per family: a layers.Option (dtype, seed) is one as it is, so
//     are this package's Strict (refuse a checkpoint that does not fit
//     exactly, where the default fits a checkpoint of another head and
//     reports what it dropped and created, as transformers'
//     from_pretrained) and WithLabels (the labels of a new classification
//     head; a classification loader otherwise reads config.json's
//     id2label), and a family's own options (vit.WithPooling,
//     vit.WithImageSize), which the other families refuse by name. The
//     report, LoadReport, is the same type for all, and says when the head
//     is new (NewHead). The older names (bert.LoadClassifier,
//     bert.LoadTokenClassifier, gpt.LoadClassifier, vit.LoadClassifier,
//     vit.LoadOptions) are kept one release as deprecated wrappers.
//
// Per-layer hidden states and attentions, transformers'
// output_hidden_states and output_attentions, are methods of each family's
// model (bert and gpt: HiddenStates, Attentions; vit: HiddenStates,
// Attentions, FeaturesOutputs; seq2seq: Outputs, CrossAttention), each
// following its Hugging Face model's convention for the last state (after
// the final norm for GPT-2 and pre-norm seq2seq; before it for ViT); in a
// graph of one's own they come from layers.Encoder and layers.Decoder's
// ForwardOutputs.
//
// The families themselves live below it: models/gpt, models/seq2seq,
// models/bert and models/vit.
package models
