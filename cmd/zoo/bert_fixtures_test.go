package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// The fine-tuning data of the BERT family's pretrain → finetune CLI
// tests, on bertTemplates' sentences.

// writeColourTSV writes dir/train.tsv, a classification set of 60 rows:
// "the red fox runs to the red den." warm and "the blue fox runs to the
// blue den." cold, alternately. It returns the path.
func writeColourTSV(t *testing.T, dir string) string {
	t.Helper()
	var rows strings.Builder
	rows.WriteString("text\tlabel\n")
	for i := range 60 {
		c, label := "red", "warm"
		if i%2 == 1 {
			c, label = "blue", "cold"
		}
		fmt.Fprintf(&rows, "the %s fox runs to the %s den.\t%s\n", c, c, label)
	}
	return write(t, filepath.Join(dir, "train.tsv"), rows.String())
}

// writeColourCoNLL writes dir/train.conll, 40 tagged sentences: colours
// ADJ, animals NOUN, the rest OTHER. It returns the path.
func writeColourCoNLL(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	tag := map[string]string{"red": "ADJ", "blue": "ADJ", "green": "ADJ", "black": "ADJ", "fox": "NOUN", "cat": "NOUN", "owl": "NOUN", "dog": "NOUN"}
	for i := range 40 {
		words := strings.Fields(fmt.Sprintf("the %s %s runs to the %s den .", []string{"red", "blue", "green", "black"}[i%4], []string{"fox", "cat", "owl", "dog"}[(i/4)%4], []string{"red", "blue"}[i%2]))
		for _, w := range words {
			tg, ok := tag[w]
			if !ok {
				tg = "OTHER"
			}
			fmt.Fprintf(&b, "%s\t%s\n", w, tg)
		}
		b.WriteString("\n")
	}
	conll := filepath.Join(dir, "train.conll")
	require.NoError(t, os.WriteFile(conll, []byte(b.String()), 0o644))
	return conll
}

// writeAnimalSquad writes dir/squad.json, 48 paragraphs "the red fox runs
// to the red den." asking "which animal runs?". It returns the path.
func writeAnimalSquad(t *testing.T, dir string) string {
	t.Helper()
	animals, colours := []string{"fox", "cat", "owl", "dog"}, []string{"red", "blue", "green", "black"}
	var paras []datasets.SquadParagraph
	for i := range 48 {
		a, c := animals[i%4], colours[(i/4)%4]
		ctx := fmt.Sprintf("the %s %s runs to the %s den.", c, a, c)
		paras = append(paras, datasets.SquadParagraph{Context: ctx, QAs: []datasets.SquadQA{{ID: fmt.Sprintf("q%d", i),
			Question: "which animal runs?", Answers: []datasets.SquadAnswer{{Text: a, Start: strings.Index(ctx, " "+a+" ") + 1}}}}})
	}
	squad := filepath.Join(dir, "squad.json")
	require.NoError(t, datasets.WriteSquad(squad, datasets.SquadFile{Version: "1.1", Data: []datasets.SquadArticle{{Title: "animals", Paragraphs: paras}}}))
	return squad
}
