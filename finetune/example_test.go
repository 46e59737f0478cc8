package finetune_test

import (
	"fmt"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/finetune"
)

// What zoo finetune vit warns about before training on a labelled image
// set: here four classes named, the fourth without images (the labels are
// not 0…3 dense), and the third with only two.
func ExampleLabelSurprises() {
	ids := []uint8{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2}
	imgs := &datasets.IDXImages{N: len(ids), Rows: 2, Cols: 2, Pix: make([]uint8, len(ids)*2*2)}
	set, err := datasets.NewIDXSet(imgs, ids, []string{"cat", "dog", "bird", "fish"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range finetune.LabelSurprises(set) {
		fmt.Println(s)
	}

	set, err = datasets.NewIDXSet(imgs, ids, nil) // names "0", "1", "2"
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(finetune.LabelSurprises(set))
	// Output:
	// 1 of its 4 classes has no images: "fish"; the labels are not 0…3 dense. A stray label (an IDX label 255 makes 256 classes) or too many --label-names is the usual cause; the model gets a head of 4 classes all the same
	// 1 class has very few images (the median class has 6): "bird" (2)
	// [1 class has very few images (the median class has 6): "2" (2)]
}

// The confusion matrix is drawn (confusion.png) up to 80 classes; past
// that, the note says why not.
func ExampleConfusionPNGNote() {
	fmt.Printf("%q\n", finetune.ConfusionPNGNote(10))
	fmt.Println(finetune.ConfusionPNGNote(1000))
	// Output:
	// ""
	// the confusion matrix is not drawn: 1000 classes, and its picture names each class on its axes, which stays readable up to 80; its numbers are printed
}
