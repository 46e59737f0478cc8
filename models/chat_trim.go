package models

import (
	"fmt"
	"strings"
)

// This file finds the templates whose whitespace the Jinja library
// (ardanlabs/jinja v1.8.0) trims otherwise than Python's jinja2 with
// transformers' trim_blocks and lstrip_blocks: the library applies a
// tag's trimming to the nearest text segment even across other tags
// ("a: {{ x }}{%- if y %}" loses the space before {{ x }}), and treats
// the first text segment as the start of a line even after a tag. Such
// a template is refused with the line, rather than rendered differently.

// trimSegment is a piece of a template's source: text, or a tag.
type trimSegment struct {
	text                string // a text segment's text
	tag                 byte   // 0 for text, else '%', '{' or '#'
	trimLeft, trimRight bool   // the tag's - marks
	line                int    // where the segment starts
	startsTemplate, raw bool   // text at offset 0; a raw block (not checked)
}

// trimSegments cuts src into text and tags as the Jinja lexer does.
func trimSegments(src string) []trimSegment {
	var segs []trimSegment
	text := func(from, to int) {
		if to > from {
			segs = append(segs, trimSegment{text: src[from:to], line: 1 + strings.Count(src[:from], "\n"), startsTemplate: from == 0})
		}
	}
	last := 0
	for i := 0; i < len(src)-1; {
		var end string
		switch src[i : i+2] {
		case "{%":
			end = "%}"
		case "{{":
			end = "}}"
		case "{#":
			end = "#}"
		default:
			i++
			continue
		}
		j := closeTag(src, i+2, end)
		if j < 0 {
			break
		}
		text(last, i)
		inner := src[i+2 : j]
		seg := trimSegment{tag: src[i+1], line: 1 + strings.Count(src[:i], "\n"),
			trimLeft: strings.HasPrefix(inner, "-"), trimRight: strings.HasSuffix(inner, "-")}
		if code := strings.Trim(inner, "-+ \t\r\n"); seg.tag == '%' && (code == "raw" || strings.HasPrefix(code, "raw ")) {
			seg.raw = true
		}
		segs = append(segs, seg)
		i, last = j+2, j+2
	}
	text(last, len(src))
	return segs
}

// checkTrimming reports the first text segment of src that the library
// would trim otherwise than jinja2.
func checkTrimming(src string) error {
	segs := trimSegments(src)
	for _, s := range segs {
		if s.raw {
			return nil // raw blocks: the inside is text to both; not compared
		}
	}
	want := jinjaTrim(segs)
	got := libraryTrim(segs)
	for i, s := range segs {
		if s.tag == 0 && want[i] != got[i] {
			return fmt.Errorf("line %d: the zoo's Jinja library (ardanlabs/jinja v1.8.0) trims the whitespace of the text %q to %q where Python's jinja2 keeps %q (it applies a {%%- or trim_blocks/lstrip_blocks across a neighbouring tag); put the text and the tag next to each other, or drop the - mark",
				s.line, s.text, got[i], want[i])
		}
	}
	return nil
}

// jinjaTrim is each text segment as jinja2's lexer trims it: a tag's -
// strips all whitespace next to it on its side, lstrip_blocks strips the
// spaces and tabs between the start of a line and a block or comment tag,
// and trim_blocks one newline after one; a tag acts only on the text right
// next to it.
func jinjaTrim(segs []trimSegment) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		if s.tag != 0 {
			continue
		}
		t := s.text
		if i+1 < len(segs) {
			switch next := segs[i+1]; {
			case next.trimLeft:
				t = strings.TrimRight(t, " \t\r\n")
			case next.tag == '%' || next.tag == '#':
				t = lstripLine(t, s.startsTemplate)
			}
		}
		if i > 0 {
			switch prev := segs[i-1]; {
			case prev.trimRight:
				t = strings.TrimLeft(t, " \t\r\n")
			case prev.tag == '%' || prev.tag == '#':
				t = trimNewline(t)
			}
		}
		out[i] = t
	}
	return out
}

// libraryTrim is each text segment as ardanlabs/jinja v1.8.0's
// applyTrimming trims it: every tag's left side first, then every right
// side, each acting on the nearest text segment on that side, across other
// tags.
func libraryTrim(segs []trimSegment) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s.text
	}
	for i, s := range segs {
		if s.tag == 0 || !s.trimLeft && s.tag == '{' {
			continue
		}
		first := true
		for j := i - 1; j >= 0; j-- {
			if segs[j].tag != 0 {
				continue
			}
			for k := j - 1; k >= 0; k-- {
				if segs[k].tag == 0 {
					first = false
					break
				}
			}
			if s.trimLeft {
				out[j] = strings.TrimRight(out[j], " \t\r\n")
			} else {
				out[j] = lstripLine(out[j], first)
			}
			break
		}
	}
	for i, s := range segs {
		if s.tag == 0 || !s.trimRight && s.tag == '{' {
			continue
		}
		for j := i + 1; j < len(segs); j++ {
			if segs[j].tag != 0 {
				continue
			}
			if s.trimRight {
				out[j] = strings.TrimLeft(out[j], " \t\r\n")
			} else {
				out[j] = trimNewline(out[j])
			}
			break
		}
	}
	return out
}

// lstripLine strips the spaces and tabs at the end of t back to a newline
// (or to t's start, when t starts the line).
func lstripLine(t string, startsLine bool) string {
	s := strings.TrimRight(t, " \t")
	if s == t {
		return t
	}
	if s == "" && startsLine || strings.HasSuffix(s, "\n") {
		return s
	}
	return t
}

// trimNewline strips one leading newline.
func trimNewline(t string) string {
	if strings.HasPrefix(t, "\r\n") {
		return t[2:]
	}
	return strings.TrimPrefix(t, "\n")
}
