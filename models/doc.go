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
//     serves every family.
//
// The families themselves live below it: models/gpt, models/seq2seq,
// models/bert and models/vit.
package models
