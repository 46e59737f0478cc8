package main

import "github.com/d73a19ff/zoo/finetune"

// deitFlags are zoo finetune vit's flags for DeiT's hard distillation
// (finetune/images_distill.go): a teacher checkpoint makes the student a
// DeiT with the class and distillation heads.
func deitFlags(f *cmdFlags, cfg *finetune.ImagesConfig) {
	f.StringVar(&cfg.Teacher, "teacher", cfg.Teacher, "a ViT or DeiT image-classification checkpoint of the same labels, image size and channels to distil from (DeiT's hard distillation): the student is then a DeiT with class and distillation heads (DeiTForImageClassificationWithTeacher), scored by their mean")
	f.StringVar(&cfg.Distillation, "distillation", cfg.Distillation, "hard (DeiT's: the distillation head learns the teacher's predicted class; the default with --teacher) or none")
}
