package vit_test

import (
	"fmt"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
)

// A DeiT is a ViT config with one more token: AsDeiT of any size, or
// DeiTBase (facebook/deit-base-distilled-patch16-224's architecture).
func ExampleAsDeiT() {
	c := vit.AsDeiT(vit.Fashion())
	m, err := vit.New(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.ModelType, m.PositionEmbeddings.Value.Shape(), m.DistillationToken.Name)
	fmt.Println("DeiT-B:", vit.DeiTBase().NumParams(), "parameters in the backbone")
	// Output:
	// deit (1, 51, 128) deit.embeddings.distillation_token
	// DeiT-B: 85800192 parameters in the backbone
}

// The student of hard distillation: a class head and a distillation head,
// whose mean a prediction reads; TeacherLogits gives all three.
func ExampleNewForImageClassificationWithTeacher() {
	m, err := vit.New(vit.AsDeiT(vit.Fashion()), vit.StoreOption(layers.WithSeed(1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := vit.NewForImageClassificationWithTeacher(m, []string{"shirt", "shoe", "bag"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Classifier.Weight.Name, c.Distillation.Weight.Name)
	g := c.Store.NewGraph()
	out, err := c.TeacherLogits(g, g.Input("pixel_values", 2, 1, 28, 28))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Logits.Shape(), out.ClsLogits.Shape(), out.DistillationLogits.Shape())
	// Output:
	// cls_classifier.weight distillation_classifier.weight
	// (2, 3) (2, 3) (2, 3)
}

// DeiT's hard-distillation loss: the class head learns the labels, the
// distillation head the teacher's predicted classes, half each.
func ExampleForImageClassification_DistillationLoss() {
	m, err := vit.New(vit.AsDeiT(vit.Fashion()), vit.StoreOption(layers.WithSeed(1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := vit.NewForImageClassificationWithTeacher(m, []string{"shirt", "shoe", "bag"})
	if err != nil {
		fmt.Println(err)
		return
	}
	g := c.Store.NewGraph()
	pixels := g.Input("pixel_values", 2, 1, 28, 28)
	labels, teacher := g.IntInput("labels", 2), g.IntInput("teacher", 2)
	copy(labels.Value().Data().([]int), []int{0, 2})
	copy(teacher.Value().Data().([]int), []int{0, 1}) // the teacher's argmax
	loss, _, err := c.DistillationLoss(g, pixels, labels, teacher, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	vm, err := g.Machine()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loss %.2f (near ln 3 = 1.10 at the start)\n", loss.Value().Data())
	// Output:
	// loss 1.09 (near ln 3 = 1.10 at the start)
}

// TeacherLogits on a classifier without the distillation head is an error.
func ExampleForImageClassification_TeacherLogits() {
	m, err := vit.New(vit.AsDeiT(vit.Fashion()))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := vit.NewForImageClassification(m, []string{"a", "b"}) // DeiTForImageClassification
	if err != nil {
		fmt.Println(err)
		return
	}
	g := c.Store.NewGraph()
	_, err = c.TeacherLogits(g, g.Input("pixel_values", 1, 1, 28, 28))
	fmt.Println(err)
	// Output:
	// vit classifier: no distillation head: it is a DeiTForImageClassification, not a DeiTForImageClassificationWithTeacher
}

// Read a DeiT checkpoint of any head into the teacher heads: what the
// checkpoint lacks is created, what the model does not use is dropped.
func ExampleLoadForImageClassificationWithTeacher() {
	c, report, err := vit.LoadForImageClassificationWithTeacher("testdata/deit/classifier")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Labels, "dropped:", report.Dropped)
	fmt.Println("created:", report.Created)
	_, _, err = vit.LoadForImageClassificationWithTeacher("testdata/deit/classifier", models.Strict())
	fmt.Println(err != nil)
	// Output:
	// [cat dog bird] dropped: [classifier.bias classifier.weight]
	// created: [cls_classifier.weight cls_classifier.bias distillation_classifier.weight distillation_classifier.bias]
	// true
}
