package vit

import (
	"fmt"
	"strings"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// The family as the checkpoint bundle sees it. The shared classification
// pipeline (models.Classifier) reads text; an image classifier offers the
// image counterpart (ForImageClassification.ClassLogits on pixels, Loss,
// and finetune.ImageTask for the engine), so NewClassifier and
// LoadClassifier are left nil here until a pipeline takes images.
func init() {
	models.Register(models.Family{
		Name: "vit",
		// vit_mae is read as a ViT: its encoder is a ViT backbone
		// (LoadForImageClassification drops the decoder), and it pretrains
		// with ViTMAEForPreTraining.
		ModelTypes: []string{ModelType, MAEModelType, DeiTModelType},
		Describe: func(dir string) (string, error) {
			c, err := readConfig(dir)
			if err != nil {
				return "", err
			}
			head := "no task head"
			var a struct {
				Architectures []string `json:"architectures"`
			}
			if err := layers.ReadConfig(dir, &a); err != nil {
				return "", err
			}
			if len(a.Architectures) == 1 && a.Architectures[0] == archMAE {
				if m, err := readMAEConfig(dir); err == nil {
					head = fmt.Sprintf("ViTMAEForPreTraining: a decoder %d wide, %d layers, %d heads; mask_ratio %g, norm_pix_loss %v",
						m.DecoderHiddenSize, m.DecoderNumHiddenLayers, m.DecoderNumAttentionHeads, m.MaskRatio, m.NormPixLoss)
				}
			}
			if len(a.Architectures) > 0 && head == "no task head" {
				head = strings.Join(a.Architectures, ", ")
			}
			if len(c.ID2Label) > 0 {
				head += fmt.Sprintf(", %d labels", len(c.ID2Label))
			}
			if c.Pooling == PoolMean {
				head += "; it " + MeanPoolingNote
			}
			name := "ViT"
			if c.isDeiT() {
				name = "DeiT (with a distillation token)"
			}
			return fmt.Sprintf("%s: %d layers, %d heads, %d wide, %d inner, %d×%d×%d images in %d×%d patches (%d tokens); %s",
				name, c.NumHiddenLayers, c.NumAttentionHeads, c.HiddenSize, c.IntermediateSize, c.ImageSize, c.ImageSize, c.NumChannels,
				c.PatchSize, c.PatchSize, c.NumPatches()+c.prefixTokens(), head), nil
		},
	})
}

// Decay reports whether a parameter gets weight decay, as timm's
// VisionTransformer.no_weight_decay and its optimizer factory
// (param_groups_weight_decay) decide: matrices do, except the class token
// and the position embeddings (NoDecay); biases and LayerNorms (one dim)
// never do. It has the engine's decay-rule signature (train.DecayRule):
// a task hands it on as its train.Decayer.
func (m *Model) Decay(name string, shape []int) bool {
	return layers.DecayExcept(m.NoDecay()...)(name, shape)
}

// NoDecay names the matrices kept out of weight decay (timm's
// no_weight_decay()): the class token and the position embeddings, and
// DeiT's distillation token (timm's DeiT adds dist_token).
func (m *Model) NoDecay() []string {
	if m.DistillationToken != nil {
		return []string{m.ClassToken.Token.Name, m.DistillationToken.Name, m.PositionEmbeddings.Name}
	}
	return []string{m.ClassToken.Token.Name, m.PositionEmbeddings.Name}
}
