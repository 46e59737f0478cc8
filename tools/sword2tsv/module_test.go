package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsCapsWord(t *testing.T) {
	for tok, want := range map[string]bool{
		"OH": true, "¿POR": true, "¡OH": true, "JEHOVÁ,": true, "ALEPH.": true, "YO": true,
		"A": false, "Y": false, "Á": false, "Él": false, "Oh": false, "LORD’s": false,
		"א": false, "1": false, "": false, "¿": false,
	} {
		assert.Equal(t, want, isCapsWord(tok), "%q", tok)
	}
}

// The psalm openings are RV1909's (Psalms 3, 4, 25, 39, 87, 124, 18:1).
func TestSplitCapsTitle(t *testing.T) {
	for _, tc := range []struct {
		text, title, body string
		ok                bool
	}{
		{"Salmo de David, cuando huía de delante de Absalom su hijo. ¡OH Jehová, cuánto",
			"Salmo de David, cuando huía de delante de Absalom su hijo.", "¡OH Jehová, cuánto", true},
		{"Al Músico principal: sobre Neginoth: Salmo de David. RESPÓNDEME cuando clamo",
			"Al Músico principal: sobre Neginoth: Salmo de David.", "RESPÓNDEME cuando clamo", true},
		{"Salmo de David. A TI, oh Jehová", "Salmo de David.", "A TI, oh Jehová", true},
		{"Al Músico principal, á Jeduthún: Salmo de David. YO DIJE: Atenderé",
			"Al Músico principal, á Jeduthún: Salmo de David.", "YO DIJE: Atenderé", true},
		{"A los hijos de Coré: Salmo: Canción. SU cimiento", "A los hijos de Coré: Salmo: Canción.", "SU cimiento", true},
		{"Cántico gradual: de David. A NO haber estado", "Cántico gradual: de David.", "A NO haber estado", true},
		{"de Saúl. Entonces dijo: AMARTE he, oh Jehová", "de Saúl. Entonces dijo:", "AMARTE he, oh Jehová", true},
		// No title: the capitals open the text, or there are none.
		{"BIENAVENTURADO el varón", "", "BIENAVENTURADO el varón", false},
		{"A TI clamaré", "", "A TI clamaré", false},
		{"Salmo de David. respóndeme", "", "Salmo de David. respóndeme", false},
		{"", "", "", false},
	} {
		title, body, ok := splitCapsTitle(tc.text)
		assert.Equal(t, []any{tc.title, tc.body, tc.ok}, []any{title, body, ok}, "%q", tc.text)
	}
}

func TestRecaseOpening(t *testing.T) {
	m := &module{capitalised: map[string]bool{"jehová": true, "sarai": true}}
	for text, want := range map[string]string{
		"EN el principio":                     "En el principio",
		"¿POR qué se amotinan":                "¿Por qué se amotinan",
		"¡OH Jehová":                          "¡Oh Jehová",
		"YO DIJE: Atenderé":                   "Yo dije: Atenderé",
		"A TI, oh Jehová":                     "A ti, oh Jehová",
		"A JEHOVÁ llamé":                      "A Jehová llamé",
		"Y SARAI, mujer de Abram":             "Y Sarai, mujer de Abram",
		"Y Á SUS discípulos":                  "Y á sus discípulos",
		"ALEPH. BIENAVENTURADOS los":          "Aleph. Bienaventurados los",
		"Salmo de David. JEHOVÁ es mi pastor": "Salmo de David. Jehová es mi pastor",
		"Aleluya. ALABARÉ á Jehová":           "Aleluya. Alabaré á Jehová",
	} {
		got, changed := m.recaseOpening(text)
		assert.Equal(t, want, got, "%q", text)
		assert.True(t, changed, "%q", text)
	}
	got, changed := m.recaseOpening("Y dijo Dios")
	assert.Equal(t, "Y dijo Dios", got)
	assert.False(t, changed)
}

func TestLearnCasing(t *testing.T) {
	v := func(c, n int, text string) verse {
		return verse{key: verseKey{"Genesis", c, n}, entryText: entryText{text: text}}
	}
	m := &module{verses: []verse{
		v(1, 1, "EN el principio crió Dios"),
		v(1, 2, "Y dijo Dios: Sea la luz. Y dijo Jehová á Dios"),
		v(2, 1, "Y FUERON acabados los cielos"),
		v(3, 1, "Y la serpiente era astuta"),
		v(3, 2, "En el huerto, en el día, dijo la serpiente"),
	}}
	m.learnCasing()
	assert.Equal(t, 3, m.openings)
	assert.Equal(t, 2, m.capsOpened)
	assert.True(t, m.capsOpenings)
	// "Dios" and "Jehová" are capitalised inside sentences; "en" is not,
	// though "En" starts a verse and "EN" a chapter.
	assert.Equal(t, map[string]bool{"dios": true, "jehová": true}, m.capitalised)
}

func TestAcrosticAndSubscription(t *testing.T) {
	for h, want := range map[string]bool{
		"א ALEPH.": true, "ב BETH.": true, "KOPH": true,
		"BOOK 1": false, "THE SONG OF THE THREE": false, "Glossary": false, "": false,
	} {
		assert.Equal(t, want, isAcrostic(h), "%q", h)
	}
	for text, want := range map[string]string{
		"ALEPH. BIENAVENTURADOS los": "BIENAVENTURADOS los",
		"BETH ¿Con qué":              "¿Con qué",
		"HE. Enséñame":               "Enséñame",
	} {
		got, ok := stripLeadingCapsWord(text)
		assert.True(t, ok, text)
		assert.Equal(t, want, got)
	}
	for _, text := range []string{"¿Con qué", "BETH", "Bienaventurados"} {
		_, ok := stripLeadingCapsWord(text)
		assert.False(t, ok, text)
	}

	got, ok := cutSubscription("para siempre. Amén. Fué escrita de Corinto á los Romanos.")
	assert.True(t, ok)
	assert.Equal(t, "para siempre. Amén.", got)
	got, ok = cutSubscription("Amén. La gracia sea con vosotros. Amén. Escrita de Roma.")
	assert.True(t, ok)
	assert.Equal(t, "Amén. La gracia sea con vosotros. Amén.", got)
	for _, text := range []string{"sea con vosotros. Amén.", "no amen here", "Amen so be it"} {
		_, ok := cutSubscription(text)
		assert.False(t, ok, text)
	}
	assert.True(t, endsWithAmen("for ever. Amen."))
	assert.False(t, endsWithAmen("Amen, I say"))
}

func TestJaccard(t *testing.T) {
	assert.Equal(t, 0.0, jaccard(nil, nil))
	assert.Equal(t, 0.0, jaccard([]string{"H1"}, nil))
	assert.Equal(t, 1.0, jaccard([]string{"H1", "H2"}, []string{"H1", "H2"}))
	// {H1, H2, H3} and {H2, H3, H4}: 2 shared of 4.
	assert.Equal(t, 0.5, jaccard([]string{"H1", "H2", "H3"}, []string{"H2", "H3", "H4"}))
}
