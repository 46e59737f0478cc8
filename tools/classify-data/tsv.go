package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// row is one labelled text.
type row struct{ text, label string }

// writeTSV writes rows under the header "text<TAB>label", atomically. The
// texts have no tabs or newlines (clean collapses them); fields with a
// quote are quoted as RFC 4180 says, which datasets.ReadLabelled reads.
func writeTSV(path string, rows []row) error {
	return atomicfile.WriteFile(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Comma = '\t'
		if err := cw.Write([]string{"text", "label"}); err != nil {
			return err
		}
		for _, r := range rows {
			if err := cw.Write([]string{r.text, r.label}); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// clean collapses every run of white space (tabs and newlines included)
// into one space and trims the ends.
func clean(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// report prints the examples per class of each split.
func report(w io.Writer, splits []string, rows ...[]row) {
	counts := make([]map[string]int, len(rows))
	var labels []string
	for i, rs := range rows {
		counts[i] = map[string]int{}
		for _, r := range rs {
			if counts[i][r.label] == 0 && !slices.Contains(labels, r.label) {
				labels = append(labels, r.label)
			}
			counts[i][r.label]++
		}
	}
	slices.Sort(labels)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "label\t")
	for _, s := range splits {
		fmt.Fprintf(tw, "%s\t", s)
	}
	fmt.Fprintln(tw)
	total := make([]int, len(rows))
	for _, l := range labels {
		fmt.Fprintf(tw, "%s\t", l)
		for i := range rows {
			fmt.Fprintf(tw, "%d\t", counts[i][l])
			total[i] += counts[i][l]
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "total\t")
	for _, n := range total {
		fmt.Fprintf(tw, "%d\t", n)
	}
	fmt.Fprintln(tw)
	tw.Flush()
}
