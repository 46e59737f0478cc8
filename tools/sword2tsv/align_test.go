package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testKJV is a small module in the KJV's markup (engKJV2006eb): Strong's
// words, added words, a note, psalm titles, Psalm 119's letter headings
// (ALEPH in the chapter's heading entry), a subscription, an empty verse
// (Genesis 1:5, 1:7) and a verse the other module lacks (Genesis 1:3).
// Jonah 2's Strong's numbers are made up: testRV1909 has them one verse
// later, as RV1909 does in the chapters it numbers differently.
const testKJV = `$$$[ Module Heading ]

$$$[ Testament 1 Heading ]
<milestone type="x-importer" subType="x-osis2mod" n="$Rev: 3769 $ (SWORD: 1.9.0)"/>
$$$Genesis 0:0
<div canonical="true" osisID="Gen" sID="gen2" type="book"/> <milestone n="Genesis" type="x-usfm-h"/> <title level="1" type="main">The First Book of Moses, called Genesis</title> <div sID="gen3" type="x-p"/>
$$$Genesis 1:0
<chapter n="1" osisID="Gen.1" sID="Gen.1"/>
$$$Genesis 1:1
In the <w lemma="strong:H7225">beginning</w> <w lemma="strong:H0430">God</w> <w lemma="strong:H1254">created</w> the <w lemma="strong:H8064">heaven</w> <w lemma="strong:H0853">and</w> the <w lemma="strong:H0776">earth</w>.
$$$Genesis 1:2
And the <w lemma="strong:H0776">earth</w> <w lemma="strong:H1961">was</w> without <w lemma="strong:H8414">form</w>, and <w lemma="strong:H0922">void</w>; and <w lemma="strong:H2822">darkness</w> <transChange type="added">was</transChange> upon the <w lemma="strong:H6440">face</w> of the <w lemma="strong:H8415">deep</w>.<note placement="foot"><reference type="annotateRef">1.2 </reference>deep: Heb. <w lemma="strong:H8415">abyss</w></note>  <div eID="gen3" type="x-p"/>
$$$Genesis 1:3
<div type="x-milestone" subType="x-preverse" sID="pv1"/><div sID="gen4" type="x-p"/> <div type="x-milestone" subType="x-preverse" eID="pv1"/>And <w lemma="strong:H0430">God</w> <w lemma="strong:H0559">said</w>, Let there <w lemma="strong:H1961">be</w> <w lemma="strong:H0216">light</w>.
$$$Genesis 1:4
And <w lemma="strong:H0430">God</w> <w lemma="strong:H7200">saw</w> the <w lemma="strong:H0216">light</w>.
$$$Genesis 1:5
<div eID="gen4" type="x-p"/>
$$$Genesis 1:7
<chapter eID="Gen.1"/>
$$$Psalms 1:0
<chapter n="1" osisID="Ps.1" sID="Ps.1"/>
$$$Psalms 1:1
<w lemma="strong:H0835">Blessed</w> <transChange type="added">is</transChange> the <w lemma="strong:H0376">man</w> that <w lemma="strong:H1980">walketh</w> not in the <w lemma="strong:H6098">counsel</w> of the <w lemma="strong:H7563">ungodly</w>.<note placement="foot"><reference type="annotateRef">1.1 </reference>ungodly: or, wicked</note> <l eID="gen2582" level="1"/>
$$$Psalms 3:1
<div type="x-milestone" subType="x-preverse" sID="pv2099"/><title canonical="true" type="psalm">A <w lemma="strong:H4210">Psalm</w> of <w lemma="strong:H1732">David</w>, when he <w lemma="strong:H1272">fled</w> from <w lemma="strong:H0053">Absalom</w> his <w lemma="strong:H1121">son</w>.</title> <lg sID="gen2600"/> <l level="1" sID="gen2601"/> <div type="x-milestone" subType="x-preverse" eID="pv2099"/><divineName><w lemma="strong:H3068">LORD</w></divineName>, how are they <w lemma="strong:H7231">increased</w> that <w lemma="strong:H6862">trouble</w> me!
$$$Psalms 4:1
<title canonical="true" type="psalm">To the chief <w lemma="strong:H5329">Musician</w> on <w lemma="strong:H5058">Neginoth</w>, A <w lemma="strong:H4210">Psalm</w> of <w lemma="strong:H1732">David</w>.</title> <w lemma="strong:H6030">Hear</w> me when I <w lemma="strong:H7121">call</w>.
$$$Psalms 25:1
<title canonical="true" type="psalm"><transChange type="added">A Psalm</transChange> of <w lemma="strong:H1732">David</w>.</title> Unto thee, O <divineName><w lemma="strong:H3068">LORD</w></divineName>, do I <w lemma="strong:H5375">lift up</w> my <w lemma="strong:H5315">soul</w>.
$$$Psalms 111:1
<w lemma="strong:H1984">Praise</w> ye the <w lemma="strong:H3050">LORD</w>. I will <w lemma="strong:H3034">praise</w> the <divineName><w lemma="strong:H3068">LORD</w></divineName> with my whole <w lemma="strong:H3824">heart</w>.
$$$Psalms 119:0
<chapter n="119" osisID="Ps.119" sID="Ps.119"/> <title><foreign>א ALEPH.</foreign></title> <lg sID="gen4634"/> <l level="1" sID="gen4635"/>
$$$Psalms 119:1
<w lemma="strong:H0835">Blessed</w> <transChange type="added">are</transChange> the <w lemma="strong:H8549">undefiled</w> in the <w lemma="strong:H1870">way</w>.
$$$Psalms 119:9
<div type="x-milestone" subType="x-preverse" sID="pv4024"/><title><foreign>ב BETH.</foreign></title> <lg sID="gen4643"/> <l level="1" sID="gen4644"/> <div type="x-milestone" subType="x-preverse" eID="pv4024"/>Wherewithal shall a young <w lemma="strong:H5288">man</w> <w lemma="strong:H2135">cleanse</w> his <w lemma="strong:H0734">way</w>?
$$$Jonah 2:1
Then <w lemma="strong:H1001">Jonah</w> <w lemma="strong:H2001">prayed</w>.
$$$Jonah 2:2
And <w lemma="strong:H1002">said</w>, I <w lemma="strong:H2002">cried</w>.
$$$Jonah 2:3
For thou hadst <w lemma="strong:H1003">cast</w> me <w lemma="strong:H2003">into</w> the deep.
$$$Jonah 2:4
Then I <w lemma="strong:H1004">said</w>, I am <w lemma="strong:H2004">cast out</w>.
$$$[ Testament 2 Heading ]

$$$John 1:1
In the <w lemma="strong:G0746">beginning</w> <w lemma="strong:G2258">was</w> the <w lemma="strong:G3056">Word</w>.
$$$Romans 16:27
To <w lemma="strong:G2316">God</w> <w lemma="strong:G3441">only</w> <w lemma="strong:G4680">wise</w>, <transChange type="added">be</transChange> <w lemma="strong:G1391">glory</w> through Jesus Christ for ever. <w lemma="strong:G0281">Amen</w>. <title>Written to the Romans from Corinthus, <transChange type="added">and sent</transChange> by Phebe.</title> <div canonical="true" eID="gen9064" osisID="Rom" type="book"/>
`

// testRV1909 is testKJV's Spanish in RV1909's markup (spaRV1909eb): each
// chapter opens with a word in capitals, psalm titles, Psalm 119's
// letters and Romans' subscription are plain text, words are written
// against <transChange> (Genesis 1:2), Genesis 1:4 is empty, Genesis 1:6
// is not in testKJV, and Psalm 4's title has no capitals after it (so it
// cannot be found).
const testRV1909 = `$$$[ Module Heading ]

$$$Genesis 0:0
<div canonical="true" osisID="Gen" sID="gen2" type="book"/> <title level="1" type="main">Génesis</title> <div sID="gen3" type="x-p"/>
$$$Genesis 1:0
<chapter n="1" osisID="Gen.1" sID="Gen.1"/>
$$$Genesis 1:1
<w lemma="strong:H7225">EN el principio</w> <w lemma="strong:H1254">crió</w> <w lemma="strong:H0430">Dios</w> <w lemma="strong:H8064">los cielos</w> <w lemma="strong:H0776">y la tierra</w>.
$$$Genesis 1:2
<w lemma="strong:H0776">Y la tierra</w> <w lemma="strong:H1961">estaba</w> <w lemma="strong:H8414">desordenada</w> <w lemma="strong:H0922">y vacía</w>, <w lemma="strong:H2822">y las tinieblas</w><transChange type="added">estaban</transChange><w lemma="strong:H5921">sobre</w> <w lemma="strong:H6440">la haz</w> <w lemma="strong:H8415">del abismo</w>.
$$$Genesis 1:4

$$$Genesis 1:5
<w lemma="strong:H7121">Y llamó</w> <w lemma="strong:H0430">Dios</w> <w lemma="strong:H0216">á la luz</w> <w lemma="strong:H3117">Día</w>.
$$$Genesis 1:6
<w lemma="strong:H0559">Y dijo</w> <w lemma="strong:H0430">Dios</w>: <w lemma="strong:H1961">Haya</w> <w lemma="strong:H7549">expansión</w>.
$$$Genesis 1:7
<chapter eID="Gen.1"/>
$$$Psalms 1:1
<w lemma="strong:H0835">BIENAVENTURADO</w> <w lemma="strong:H0376">el varón</w> <w lemma="strong:H0834">que</w> <w lemma="strong:H3808">no</w> <w lemma="strong:H1980">anduvo</w> <w lemma="strong:H6098">en consejo</w> <w lemma="strong:H7563">de malos</w>.
$$$Psalms 3:1
<w lemma="strong:H4210">Salmo</w> <w lemma="strong:H1732">de David</w>, <w lemma="strong:H1272">cuando huía</w> <w lemma="strong:H6440">de delante</w> <w lemma="strong:H0053">de Absalom</w> <w lemma="strong:H1121">su hijo</w>. ¡<w lemma="strong:H1121">OH</w> <w lemma="strong:H3068">Jehová</w>, <w lemma="strong:H4100">cuánto se</w> <w lemma="strong:H7231">han multiplicado</w> <w lemma="strong:H6862">mis enemigos</w>!
$$$Psalms 4:1
<w lemma="strong:H5329">Al Músico</w> principal: <w lemma="strong:H5058">sobre Neginoth</w>: <w lemma="strong:H4210">Salmo</w> <w lemma="strong:H1732">de David</w>. <w lemma="strong:H6030">respóndeme</w> <w lemma="strong:H7121">cuando clamo</w>.
$$$Psalms 25:1
<w lemma="strong:H1732">Salmo de David</w>. A <w lemma="strong:H0413">TI</w>, <w lemma="strong:H3068">oh Jehová</w>, <w lemma="strong:H5375">levantaré</w> <w lemma="strong:H5315">mi alma</w>.
$$$Psalms 111:1
<w lemma="strong:H1984">Aleluya</w>. <w lemma="strong:H3034">ALABARÉ</w> <w lemma="strong:H3068">á Jehová</w> <w lemma="strong:H3824">con todo el corazón</w>.
$$$Psalms 119:0
<div sID="gen617" type="x-p"/><chapter n="119" osisID="Ps.119" sID="Ps.119"/>
$$$Psalms 119:1
ALEPH. <w lemma="strong:H0835">BIENAVENTURADOS</w> <w lemma="strong:H8549">los perfectos</w> <w lemma="strong:H1870">de camino</w>.
$$$Psalms 119:9
BETH ¿<w lemma="strong:H4100">Con qué</w> <w lemma="strong:H2135">limpiará</w> <w lemma="strong:H5288">el joven</w> <w lemma="strong:H0734">su camino</w>?
$$$Jonah 2:1
<w lemma="strong:H1002">MAS dijo</w> <w lemma="strong:H2002">clamé</w>.
$$$Jonah 2:2
<w lemma="strong:H1003">Echásteme</w> <w lemma="strong:H2003">en</w> el profundo.
$$$Jonah 2:3
<w lemma="strong:H1004">Y yo dije</w>: <w lemma="strong:H2004">Echado soy</w>.
$$$Jonah 2:4
<w lemma="strong:H1005">Las aguas</w> me <w lemma="strong:H2005">rodearon</w>.
$$$John 1:1
<w lemma="strong:G0746">EN el principio</w> <w lemma="strong:G2258">era</w> <w lemma="strong:G3056">el Verbo</w>.
$$$Romans 16:27
<w lemma="strong:G3441">Al solo</w> <w lemma="strong:G2316">Dios</w> <w lemma="strong:G4680">sabio</w>, <w lemma="strong:G1391">sea gloria</w> por Jesucristo para siempre. <w lemma="strong:G0281">Amén</w>. <w lemma="strong:G1125">Fué escrita</w> de Corinto á los Romanos.
`

// wantTrain and wantTest are testKJV and testRV1909 aligned with John
// held out: Genesis 1:3 to 1:7 have no partner, Psalm 4's title is not
// found, Jonah 2 is misaligned.
const (
	wantTrain = "In the beginning God created the heaven and the earth.\tEn el principio crió Dios los cielos y la tierra.\n" +
		"And the earth was without form, and void; and darkness was upon the face of the deep.\tY la tierra estaba desordenada y vacía, y las tinieblas estaban sobre la haz del abismo.\n" +
		"Blessed is the man that walketh not in the counsel of the ungodly.\tBienaventurado el varón que no anduvo en consejo de malos.\n" +
		"LORD, how are they increased that trouble me!\t¡Oh Jehová, cuánto se han multiplicado mis enemigos!\n" +
		"Unto thee, O LORD, do I lift up my soul.\tA ti, oh Jehová, levantaré mi alma.\n" +
		"Praise ye the LORD. I will praise the LORD with my whole heart.\tAleluya. Alabaré á Jehová con todo el corazón.\n" +
		"Blessed are the undefiled in the way.\tBienaventurados los perfectos de camino.\n" +
		"Wherewithal shall a young man cleanse his way?\t¿Con qué limpiará el joven su camino?\n" +
		"To God only wise, be glory through Jesus Christ for ever. Amen.\tAl solo Dios sabio, sea gloria por Jesucristo para siempre. Amén.\n"
	wantTest = "In the beginning was the Word.\tEn el principio era el Verbo.\n"
)

// testModule reads an IMP text.
func testModule(t *testing.T, name, imp string) *module {
	t.Helper()
	entries, err := readIMP(strings.NewReader(imp), name)
	require.NoError(t, err)
	m, err := newModule(name, entries)
	require.NoError(t, err)
	return m
}

func TestAlign(t *testing.T) {
	kjv, rv := testModule(t, "kjv", testKJV), testModule(t, "rv", testRV1909)
	assert.False(t, kjv.capsOpenings)
	assert.True(t, rv.capsOpenings)
	pairs, st := align(kjv, rv, false)
	var train, test bytes.Buffer
	require.NoError(t, writePairs(pairs, map[string]bool{"John": true}, &train, &test, st))
	assert.Equal(t, wantTrain, train.String())
	assert.Equal(t, wantTest, test.String())

	assert.Equal(t, [2]int{19, 19}, st.verses)
	assert.Equal(t, [2]int{2, 2}, st.empty)   // Genesis 1:5 and 1:7; 1:4 and 1:7
	assert.Equal(t, [2]int{1, 1}, st.missing) // Genesis 1:6; 1:3
	assert.Equal(t, [2]int{2, 2}, st.unpartnered)
	assert.Equal(t, [2][]verseKey{{{"Genesis", 1, 3}, {"Genesis", 1, 4}}, {{"Genesis", 1, 5}, {"Genesis", 1, 6}}}, st.unpartneredKeys)
	assert.Equal(t, 1, st.bothEmpty)         // Genesis 1:7
	assert.Equal(t, [2]int{3, 0}, st.marked) // Psalms 3, 4 and 25
	assert.Equal(t, [2]int{0, 2}, st.split)
	assert.Equal(t, [2]int{0, 1}, st.notFound) // Psalm 4
	assert.Equal(t, [2]int{0, 1}, st.leftAlone)
	assert.Equal(t, []verseKey{{"Psalms", 111, 1}}, st.leftAloneKeys[1])
	assert.Equal(t, [2]int{0, 2}, st.acrostic)
	assert.Equal(t, [2]int{0, 1}, st.subscription)
	// Genesis 1, Psalms 1, 3, 25, 111 and 119, John 1.
	assert.Equal(t, [2]int{0, 7}, st.recased)
	assert.Equal(t, 4, st.misaligned)
	assert.Equal(t, []chapterCount{{verseKey{"Jonah", 2, 0}, 4}}, st.misalignedChapters)
	assert.Empty(t, st.misalignedVerses)
	assert.Equal(t, 0, st.unchecked)
	assert.Equal(t, 9, st.train)
	assert.Equal(t, 1, st.test)
	assert.Equal(t, []titleSample{
		{key: verseKey{"Psalms", 3, 1},
			before:    "Salmo de David, cuando huía de delante de Absalom su hijo. ¡OH Jehová, cuánto se han multiplicado mis enemigos!",
			after:     "¡OH Jehová, cuánto se han multiplicado mis enemigos!",
			title:     "Salmo de David, cuando huía de delante de Absalom su hijo.",
			otherSide: "A Psalm of David, when he fled from Absalom his son."},
		{key: verseKey{"Psalms", 25, 1},
			before: "Salmo de David. A TI, oh Jehová, levantaré mi alma.", after: "A TI, oh Jehová, levantaré mi alma.",
			title: "Salmo de David.", otherSide: "A Psalm of David."},
	}, st.samples)

	// Without the check, Jonah 2's four misaligned pairs are written.
	pairs, st = align(kjv, rv, true)
	assert.Len(t, pairs, 14)
	assert.Equal(t, 0, st.misaligned)
	assert.Equal(t, "Then Jonah prayed.\tMas dijo clamé.", pairs[8].src+"\t"+pairs[8].tgt)

	// The other way round, the heuristics run on the source side.
	pairs, st = align(rv, kjv, false)
	assert.Equal(t, [2]int{2, 0}, st.split)
	assert.Equal(t, [2]int{2, 0}, st.acrostic)
	assert.Equal(t, [2]int{1, 0}, st.subscription)
	var swapped []string
	for _, p := range pairs {
		swapped = append(swapped, p.tgt+"\t"+p.src+"\n")
	}
	assert.Equal(t, wantTrain+wantTest, strings.Join(swapped[:8], "")+swapped[9]+swapped[8])
}

func TestWriteMono(t *testing.T) {
	rv := testModule(t, "rv", testRV1909)
	var out bytes.Buffer
	st, err := writeMono(rv, map[string]bool{"John": true, "Jonah": true}, &out)
	require.NoError(t, err)
	assert.Equal(t, "En el principio crió Dios los cielos y la tierra.\n"+
		"Y la tierra estaba desordenada y vacía, y las tinieblas estaban sobre la haz del abismo.\n"+
		"Y llamó Dios á la luz Día.\n"+
		"Y dijo Dios: Haya expansión.\n"+
		"Bienaventurado el varón que no anduvo en consejo de malos.\n"+
		"Salmo de David, cuando huía de delante de Absalom su hijo. ¡Oh Jehová, cuánto se han multiplicado mis enemigos!\n"+
		"Al Músico principal: sobre Neginoth: Salmo de David. respóndeme cuando clamo.\n"+
		"Salmo de David. A ti, oh Jehová, levantaré mi alma.\n"+
		"Aleluya. Alabaré á Jehová con todo el corazón.\n"+
		"Aleph. Bienaventurados los perfectos de camino.\n"+
		"BETH ¿Con qué limpiará el joven su camino?\n"+
		"Al solo Dios sabio, sea gloria por Jesucristo para siempre. Amén. Fué escrita de Corinto á los Romanos.\n", out.String())
	assert.Equal(t, monoStats{lines: 12, empty: 2, recased: 6, excluded: map[string]int{"John": 1, "Jonah": 4}}, st)

	// The KJV keeps its psalm titles, without the held-out books left out.
	kjv := testModule(t, "kjv", testKJV)
	out.Reset()
	st, err = writeMono(kjv, nil, &out)
	require.NoError(t, err)
	assert.Equal(t, 17, st.lines)
	assert.Contains(t, out.String(), "\nA Psalm of David, when he fled from Absalom his son. LORD, how are they increased that trouble me!\n")
	assert.Contains(t, out.String(), "\nIn the beginning was the Word.\n")
}

// writeTestModules writes testKJV and testRV1909 as IMP files in a new
// directory.
func writeTestModules(t *testing.T) (dir, kjv, rv string) {
	t.Helper()
	dir = t.TempDir()
	kjv, rv = filepath.Join(dir, "kjv.imp"), filepath.Join(dir, "rv.imp")
	require.NoError(t, os.WriteFile(kjv, []byte(testKJV), 0o644))
	require.NoError(t, os.WriteFile(rv, []byte(testRV1909), 0o644))
	return dir, kjv, rv
}

func TestRunPairs(t *testing.T) {
	dir, kjv, rv := writeTestModules(t)
	train, test := filepath.Join(dir, "train.tsv"), filepath.Join(dir, "test.tsv")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-src", kjv, "-tgt", rv, "-train", train, "-test", test, "-heldout", "John", "-v"}, &out, &errOut), errOut.String())
	assert.Empty(t, out.String())
	got, err := os.ReadFile(train)
	require.NoError(t, err)
	assert.Equal(t, wantTrain, string(got))
	got, err = os.ReadFile(test)
	require.NoError(t, err)
	assert.Equal(t, wantTest, string(got))

	report := errOut.String()
	for _, line := range []string{
		"sword2tsv: pairs written: 10 (train 9, test 1)\n",
		"sword2tsv: source " + kjv + ": 19 verses, 2 empty, 1 keys of the other module missing, 2 verses with text unpartnered [Genesis 1:3, Genesis 1:4]\n",
		"sword2tsv: target " + rv + ": 19 verses, 2 empty, 1 keys of the other module missing, 2 verses with text unpartnered [Genesis 1:5, Genesis 1:6]\n",
		"sword2tsv: keys empty on both sides: 1\n",
		"sword2tsv: psalm titles: 0 marked in both; source 3 marked, 0 split by capitals, 0 not found; target 0 marked, 2 split by capitals, 1 not found (pairs not found are dropped)\n",
		"sword2tsv: " + rv + " opens 5 of 9 chapters with a word in capitals: 7 openings recased; 1 first verses have text before the capitals where the other side marks no title, left as they are: [Psalms 111:1]\n",
		"sword2tsv: acrostic headings stripped: source 0 (0 not found), target 2 (0 not found)\n",
		"sword2tsv: subscriptions cut: source 0 (0 not found), target 1 (0 not found)\n",
		"sword2tsv: versification check: 4 pairs dropped: 4 in 1 whole chapters [Jonah 2 (4)], 0 single verses []; 0 pairs unchecked (no Strong's numbers on a side)\n",
		"sword2tsv: held out: John 1 = 1 pairs, 10.0%\n",
		`sword2tsv: title Psalms 3:1: "A Psalm of David, when he fled from Absalom his son." | "Salmo de David, cuando huía de delante de Absalom su hijo."` + "\n",
	} {
		assert.Contains(t, report, line)
	}

	// The default held-out books are not in the test modules.
	errOut.Reset()
	assert.Equal(t, 1, run([]string{"-src", kjv, "-tgt", rv, "-train", train, "-test", test}, &out, &errOut))
	assert.Equal(t, "sword2tsv: held-out book Joshua has no pairs: is it in both modules?\n", errOut.String())
	_, err = os.Stat(train)
	assert.True(t, os.IsNotExist(err), "a failed run leaves no training file")
}

func TestRunMono(t *testing.T) {
	dir, _, rv := writeTestModules(t)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-mono", rv, "-exclude-heldout", "-heldout", "John,Jonah"}, &out, &errOut), errOut.String())
	assert.Equal(t, 12, strings.Count(out.String(), "\n"))
	assert.NotContains(t, out.String(), "Verbo")
	assert.Contains(t, errOut.String(), "sword2tsv: "+rv+": 12 verses written, 2 empty skipped, 6 chapter openings recased\n")
	assert.Contains(t, errOut.String(), "sword2tsv: held-out verses left out: Jonah 4, John 1\n")

	file := filepath.Join(dir, "mono.txt")
	out.Reset()
	require.Equal(t, 0, run([]string{"-mono", rv, "-out", file}, &out, &errOut), errOut.String())
	assert.Empty(t, out.String())
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, 17, strings.Count(string(got), "\n"))
	assert.Contains(t, string(got), "\nEn el principio era el Verbo.\n")
}

func TestRunErrors(t *testing.T) {
	dir, kjv, rv := writeTestModules(t)
	train, test := filepath.Join(dir, "train.tsv"), filepath.Join(dir, "test.tsv")
	for _, tc := range []struct {
		args   []string
		status int
		want   string
	}{
		{nil, 2, "sword2tsv: need -src and -tgt (or -mono)\nusage: sword2tsv"},
		{[]string{"-src", kjv, "-tgt", rv}, 2, "sword2tsv: need -train\n"},
		{[]string{"-src", kjv, "-tgt", rv, "-train", train}, 2, "sword2tsv: need -test for the -heldout books (or -heldout '')\n"},
		{[]string{"-src", kjv, "-tgt", rv, "-train", train, "-test", train}, 2, "sword2tsv: -train and -test name the same file\n"},
		{[]string{"-mono", rv, "-src", kjv}, 2, "sword2tsv: -mono does not take -src, -tgt, -train or -test\n"},
		{[]string{"-src", kjv, "-tgt", rv, "-train", train, "-exclude-heldout"}, 2, "sword2tsv: -exclude-heldout and -out go with -mono\n"},
		{[]string{"-mono", rv, "extra"}, 2, "sword2tsv: unexpected arguments"},
		{[]string{"-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-src", kjv, "-tgt", rv, "-train", train, "-test", test, "-heldout", "Tobit"}, 1,
			`sword2tsv: -heldout: unknown book "Tobit"`},
		{[]string{"-src", kjv, "-tgt", filepath.Join(dir, "none.imp"), "-train", train, "-test", test}, 1,
			"sword2tsv: " + filepath.Join(dir, "none.imp") + ": no such file or directory\n"},
		{[]string{"-src", kjv, "-tgt", rv, "-train", filepath.Join(dir, "no", "train.tsv"), "-test", test}, 1,
			"sword2tsv: " + filepath.Join(dir, "no", "train.tsv") + ": no such file or directory\n"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, tc.status, run(tc.args, &out, &errOut), "%q", tc.args)
		assert.Contains(t, errOut.String(), tc.want, "%q", tc.args)
	}

	// Malformed markup names the file, line and verse.
	bad := filepath.Join(dir, "bad.imp")
	require.NoError(t, os.WriteFile(bad, []byte("$$$Genesis 1:1\nIn the <w lemma=x>beginning</w>\n"), 0o644))
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, run([]string{"-mono", bad}, &out, &errOut))
	assert.Equal(t, "sword2tsv: "+bad+": line 2 (Genesis 1:1): unquoted attribute lemma in \"<w lemma=x>\"\n", errOut.String())

	assert.Equal(t, 0, run([]string{"-h"}, &out, &errOut))
}
