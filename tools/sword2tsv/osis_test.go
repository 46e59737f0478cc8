package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The markup below is copied from, or modelled on, mod2imp's output for
// engKJV2006eb, spaRV1909eb and engWEB2015eb (the verse named in each
// case).
func TestStripOSIS(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      entryText
	}{
		{"Strong's words (KJV Gen 1:1)",
			`In the <w lemma="strong:H7225">beginning</w> <w lemma="strong:H0430">God</w> <w lemma="strong:H1254">created</w> the <w lemma="strong:H8064">heaven</w>.`,
			entryText{text: "In the beginning God created the heaven.", strongs: []string{"H1254", "H430", "H7225", "H8064"}}},
		{"two numbers in one lemma",
			`<w lemma="strong:H4905 H7919">Masquil</w>`,
			entryText{text: "Masquil", strongs: []string{"H4905", "H7919"}}},
		{"transChange and a note (KJV Gen 1:4)",
			`<w lemma="strong:H3588">that</w> <transChange type="added">it was</transChange> <w lemma="strong:H2896">good</w>.<note placement="foot"><reference type="annotateRef">1.4 </reference>the <w lemma="strong:H0216">light</w> from…: Heb. between</note>`,
			entryText{text: "that it was good.", strongs: []string{"H2896", "H3588"}}},
		{"divineName",
			`I <transChange type="added">am</transChange> the <divineName><w lemma="strong:H3068">LORD</w></divineName>:`,
			entryText{text: "I am the LORD:", strongs: []string{"H3068"}}},
		{"a note against punctuation is no word boundary",
			`The Lord<note placement="foot">The word is “Adonai.”</note>: he`,
			entryText{text: "The Lord: he"}},
		{"a note between two words is (WEB 1 Macc 5:43)",
			`fled to the temple at<note placement="foot"><reference type="annotateRef">5:43 </reference>See 1 Maccabees 5:26. </note>Carnaim.`,
			entryText{text: "fled to the temple at Carnaim."}},
		{"milestones and a paragraph div (KJV Gen 1:3)",
			`<div type="x-milestone" subType="x-preverse" sID="pv1"/><div sID="gen4" type="x-p"/> <div type="x-milestone" subType="x-preverse" eID="pv1"/>And <w lemma="strong:H0430">God</w> said.  <div eID="gen4" type="x-p"/>`,
			entryText{text: "And God said.", strongs: []string{"H430"}}},
		{"poetry lines are word boundaries (WEB Ps 3:1)",
			`increased!<l eID="gen7861" level="1"/><l level="2" sID="gen7862"/>Many <lb type="x-p"/>more`,
			entryText{text: "increased! Many more"}},
		{"a word split by its Strong's tag (KJV Heb 5:7)",
			`<w lemma="strong:G1144">with tear</w>s, and`,
			entryText{text: "with tears, and", strongs: []string{"G1144"}}},
		{"psalm title (KJV Ps 3:1)",
			`<div type="x-milestone" subType="x-preverse" sID="pv2099"/><title canonical="true" type="psalm">A <w lemma="strong:H4210">Psalm</w> of David, when he fled.</title> <lg sID="gen2600"/> <l level="1" sID="gen2601"/> <div type="x-milestone" subType="x-preverse" eID="pv2099"/><divineName><w lemma="strong:H3068">LORD</w></divineName>, how are they increased`,
			entryText{text: "LORD, how are they increased", title: "A Psalm of David, when he fled.", strongs: []string{"H3068", "H4210"}}},
		{"acrostic heading (KJV Ps 119:9)",
			`<div type="x-milestone" subType="x-preverse" sID="pv4024"/><title><foreign>ב BETH.</foreign></title> <lg sID="gen4643"/> <l level="1" sID="gen4644"/> <div type="x-milestone" subType="x-preverse" eID="pv4024"/>Wherewithal shall a young man`,
			entryText{text: "Wherewithal shall a young man", heading: "ב BETH.", headingFirst: true}},
		{"subscription (KJV Rom 16:27)",
			`for ever. Amen. <title>Written to the Romans from Corinthus, <transChange type="added">and sent</transChange> by Phebe.</title> <div canonical="true" eID="gen9064" osisID="Rom" type="book"/>`,
			entryText{text: "for ever. Amen.", heading: "Written to the Romans from Corinthus, and sent by Phebe.", headingLast: true}},
		{"a heading in the middle is neither first nor last",
			`one. <title>Heading</title> two.`,
			entryText{text: "one. two.", heading: "Heading"}},
		{"a note inside a heading is not heading text (WEB Dan 3:24)",
			`<title>THE SONG<note placement="foot">an addition</note></title> They walked`,
			entryText{text: "They walked", heading: "THE SONG", headingFirst: true}},
		{"entities",
			`Jacob&apos;s &amp; &lt;Esau&gt; &#8220;x&#x201D;`,
			entryText{text: "Jacob's & <Esau> “x”"}},
		{"q without and with a marker (KJV Matt 3:15)",
			`said, <q marker="" who="Jesus"><w lemma="strong:G0863">Suffer</w> it</q>; <q marker="'" who="x">Yes</q>, <q sID="q1" marker="“"/>No<q eID="q1" marker="”"/>`,
			entryText{text: "said, Suffer it; 'Yes', “No”", strongs: []string{"G863"}}},
		{"RV1909: word elements written against each other (Ps 107:1)",
			`<w lemma="strong:H5769">para siempre</w><transChange type="added">es</transChange><w lemma="strong:H2617">su misericordia</w>.`,
			entryText{text: "para siempre es su misericordia.", strongs: []string{"H2617", "H5769"}}},
		{"RV1909: an enclitic pronoun joins its verb",
			`<w lemma="strong:H3318">sáca</w><transChange type="added">lo</transChange> <w lemma="strong:H3318">fuera</w>, <w lemma="strong:H5414">Dad</w><transChange type="added">me</transChange>`,
			entryText{text: "sácalo fuera, Dadme", strongs: []string{"H3318", "H5414"}}},
		{"RV1909: a pronoun after a name does not",
			`<w lemma="strong:H3091">Josué</w><transChange type="added">los</transChange> circuncidó, y <w>no</w><transChange type="added">lo</transChange> hace`,
			entryText{text: "Josué los circuncidó, y no lo hace", strongs: []string{"H3091"}}},
		{"USFM markers left in the KJV (Exod 6:3)",
			`by my <w lemma="strong:H8034">name</w> \nd <w lemma="strong:H3068">JEHOVAH</w></divineName> was I not`,
			entryText{text: "by my name JEHOVAH was I not", strongs: []string{"H3068", "H8034"},
				repairs: []string{`USFM marker "\\nd " removed`, "</divineName> without <divineName> ignored"}}},
		{"an element left open in a note (KJV Exod 6:2)",
			`the <divineName><w lemma="strong:H3068">LORD</w></divineName>:<note placement="foot">the <divineName>LORD\+nd*: or, JEHOVAH</note> x`,
			entryText{text: "the LORD: x", strongs: []string{"H3068"},
				repairs: []string{`USFM marker "\\+nd*" removed`, "</note> closes <divineName>"}}},
		{"WEB's glossary after Rev 22:21",
			`all the saints. Amen.  <chapter eID="Rev.22"/> <div sID="g7" type="glossary"/> <title level="1" type="main">Glossary</title> <div sID="g8" type="introduction"/> The following words <list> <item subType="x-introduction" type="x-indent-1"><seg type="keyword">Abba</seg> father</item></list> <div eID="g8" type="introduction"/><div eID="g7" type="glossary"/>`,
			entryText{text: "all the saints. Amen."}},
		{"speaker labels (WEB Song 1:2)",
			`<speaker>Beloved</speaker> <lg sID="gen15617"/> <l level="1" sID="gen15618"/>Let him kiss me`,
			entryText{text: "Let him kiss me"}},
		{"paragraph signs, tabs and newlines (KJV Jonah 2:10)",
			"¶ And the\tLORD\nspake\r\n unto\u00a0the fish.",
			entryText{text: "And the LORD spake unto the fish."}},
		{"comments and declarations", `<!-- c --><?pi x?><!DOCTYPE osis>a`, entryText{text: "a"}},
		{"a chapter heading entry is empty", `<chapter n="1" osisID="Gen.1" sID="Gen.1"/>`, entryText{}},
		{"a tag cut off by the end of the entry (WEB Hosea 0:0)",
			`word <d`,
			entryText{text: "word", repairs: []string{`entry cut short in a tag: "<d" dropped`}}},
		{"an element left open at the end",
			`<q who="x">open`,
			entryText{text: "open", repairs: []string{"<q> not closed"}}},
		{"a '>' inside an attribute value", `<milestone n="a>b" type="x"/>c`, entryText{text: "c"}},
		{"invalid UTF-8", "a\xffb", entryText{text: "a\uFFFDb"}},
	} {
		unknown := map[string]int{}
		got, err := stripOSIS(tc.raw, unknown)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
		assert.Empty(t, unknown, tc.name)
	}
}

func TestStripOSISUnknown(t *testing.T) {
	unknown := map[string]int{}
	got, err := stripOSIS(`<foo a="1">bar</foo><foo/> baz <w>qux</w>`, unknown)
	require.NoError(t, err)
	assert.Equal(t, "bar baz qux", got.text)
	assert.Equal(t, map[string]int{"foo": 2}, unknown)
}

func TestStripOSISErrors(t *testing.T) {
	for raw, want := range map[string]string{
		`a < b <w>c</w>`:         `"< b <" is not a tag`,
		`<w lemma=strong>a</w>`:  `unquoted attribute lemma in "<w lemma=strong>"`,
		`<w lemma="x>a</w> <p>`:  `unterminated tag "<w lemma=\"x>a</w> <p>"`,
		`<1w>a</1w>`:             `"<1w>" is not a tag`,
		`<w lemma>a</w>`:         `malformed attribute in "<w lemma>"`,
		`<w>a</w x="1">`:         `end tag "</w x=\"1\">" has attributes`,
		`<!-- never closed <w>x`: "unterminated comment",
	} {
		_, err := stripOSIS(raw, nil)
		assert.EqualError(t, err, want, "%q", raw)
	}
}

func TestEncliticJoins(t *testing.T) {
	for _, tc := range []struct {
		prev, next string
		want       bool
	}{
		{"sáca", "lo", true}, {"oyéndo", "lo", true}, {"sacar", "la", true},
		{"haced", "lo", true}, {"di", "les", true}, {"dínos", "lo", true},
		{"Júrame", "lo", true}, // an accent: a verb
		{"no", "lo", false}, {"y", "la", false}, {"gentes", "lo", false},
		{"cuánto", "nos", false}, {"Jehová", "los", false}, {"Josué", "los", false},
		{"sácalo", "también", false}, // not a clitic
		{"", "lo", false},
	} {
		assert.Equal(t, tc.want, encliticJoins(tc.prev, tc.next), "%s|%s", tc.prev, tc.next)
	}
}

func TestNormalizeSpace(t *testing.T) {
	for in, want := range map[string]string{
		"  a \t b\n\nc  ": "a b c",
		"a\u2028b\u0085c": "a b c",
		"a\x00b\x1bc":     "abc",
		"¶":               "",
		"":                "",
	} {
		assert.Equal(t, want, normalizeSpace(in), "%q", in)
	}
}
