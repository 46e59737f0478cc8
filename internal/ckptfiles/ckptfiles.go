// Package ckptfiles names the files of a checkpoint directory: the same for
// every family, named as Hugging Face names them, so that Hugging Face's
// from_pretrained reads the model and its tokenizer from the directory as it
// is, plus the training state beside them. It is a leaf: layers and models
// (which write and read the model's files) and train (which writes and reads
// the training state next to them) share these names without train
// importing models. models re-exports them as models.ConfigFile, ….
package ckptfiles

// The files of a checkpoint directory.
const (
	Config       = "config.json"              // the model's configuration, with model_type
	Weights      = "model.safetensors"        // the weights, Hugging Face's tensor names
	Tokenizer    = "tokenizer.json"           // text families: a Hugging Face tokenizer
	Preprocessor = "preprocessor_config.json" // image families: Hugging Face's image processor
	Optimizer    = "optimizer.safetensors"    // training state: the optimizer's moments
	Trainer      = "trainer.json"             // training state: step, data position, dropout counter
)
