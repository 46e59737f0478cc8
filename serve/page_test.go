package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPage: GET / is the web page, HTML with its script and style inline
// and nothing fetched from elsewhere (no CDN, no external URL), calling
// the server's own routes; it needs no API key (its calls do).
func TestPage(t *testing.T) {
	dirs := testCheckpoints(t)
	_, url := startServer(t, map[string]string{"cls": dirs["cls"]}, Config{APIKeys: []string{"k"}})
	resp, err := http.Get(url + "/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, Page(), body)
	html := string(body)
	for _, want := range []string{"<script>", "/v1/models", "/v1/completions", "stream: true", "/models/", `type: "file"`, "Authorization"} {
		require.Contains(t, html, want)
	}
	require.NotRegexp(t, regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`), html, "nothing loaded from elsewhere")
	require.NotContains(t, html, "http://")
	require.NotContains(t, html, "https://")
	resp, err = http.Get(url + "/nothing")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "only / itself is the page")
}

// TestPageInChromium drives the page in headless Chromium
// (tools/servepage/page.mjs: Debian's /usr/bin/chromium through the
// pinned playwright-core): it lists the models, classifies a text (the
// labels and scores of POST /models/cls), streams a generation (the text
// of /v1/completions, in several chunks), classifies an uploaded image
// (the labels of POST /models/vit), and takes a screenshot into the
// test's temp dir. It skips with a warning where Chromium, node or the
// package is missing: apt-get install chromium; (cd tools/servepage &&
// npm ci).
func TestPageInChromium(t *testing.T) {
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("warning: /usr/bin/chromium is missing (apt-get install chromium): the page's browser test is skipped")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("warning: node is missing (apt-get install nodejs npm): the page's browser test is skipped")
	}
	dir := filepath.Join("..", "tools", "servepage")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Skip("warning: playwright-core is not installed ((cd tools/servepage && npm ci)): the page's browser test is skipped")
	}
	dirs := testCheckpoints(t)
	_, url := startServer(t, map[string]string{"cls": dirs["cls"], "gpt": longGPT(t), "vit": dirs["vit"]}, Config{})
	tmp := t.TempDir()
	img := filepath.Join(tmp, "square.png")
	writePNG(t, img)
	shot := filepath.Join(tmp, "page.png")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "page.mjs", url+"/", shot, img)
	cmd.Dir = dir
	b, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("node page.mjs: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var got struct {
		Console  []string
		Models   [][2]string
		Classify struct {
			State  string
			Labels []string
			Scores []float64
			Bars   []float64
			Error  []string
		}
		Generate struct {
			State, Text, Done string
			Chunks            int
		}
		Image struct {
			State  string
			Labels []string
			Error  []string
		}
		Screenshot string
	}
	require.NoError(t, json.Unmarshal(b, &got), string(b))
	require.Empty(t, got.Console, "no errors in the page's console")
	require.Equal(t, [][2]string{{"cls", "text-classification"}, {"gpt", "text-generation"}, {"vit", "image-classification"}}, got.Models)

	code, body, _ := post(t, url+"/models/cls", `{"inputs": "a gripping film", "parameters": {"top_k": null}}`)
	require.Equal(t, http.StatusOK, code)
	var labels [][]struct {
		Label string
		Score float64
	}
	require.NoError(t, json.Unmarshal(body, &labels))
	require.Equal(t, "done", got.Classify.State, got.Classify.Error)
	require.Len(t, got.Classify.Labels, len(labels[0]))
	for i, l := range labels[0] {
		require.Equal(t, l.Label, got.Classify.Labels[i])
		require.Equal(t, fmt.Sprintf("%.3f", l.Score), fmt.Sprintf("%.3f", got.Classify.Scores[i]))
		require.InDelta(t, l.Score, got.Classify.Bars[i], 0.01, "label %s's bar is drawn at its score", l.Label)
	}

	require.Equal(t, "done", got.Generate.State)
	require.Equal(t, "true", got.Generate.Done, "the stream ended with [DONE]")
	code, body, _ = post(t, url+"/v1/completions", `{"model": "gpt", "prompt": "the cat", "max_tokens": 12}`)
	require.Equal(t, http.StatusOK, code)
	var c struct{ Choices []struct{ Text string } }
	require.NoError(t, json.Unmarshal(body, &c))
	require.Equal(t, c.Choices[0].Text, got.Generate.Text)
	require.Greater(t, got.Generate.Chunks, 1, "the text came in pieces")

	imgBytes, err := os.ReadFile(img)
	require.NoError(t, err)
	req, _ := http.NewRequest(http.MethodPost, url+"/models/vit", strings.NewReader(string(imgBytes)))
	req.Header.Set("Content-Type", "image/png")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var vit []struct{ Label string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&vit))
	resp.Body.Close()
	require.Equal(t, "done", got.Image.State, got.Image.Error)
	require.Len(t, got.Image.Labels, len(vit))
	for i, l := range vit {
		require.Equal(t, l.Label, got.Image.Labels[i])
	}
	st, err := os.Stat(shot)
	require.NoError(t, err, "the screenshot")
	require.Greater(t, st.Size(), int64(1000))
	t.Logf("screenshot: %s (%d bytes)", shot, st.Size())
	if keep := os.Getenv("ZOO_SERVEPAGE_SHOT"); keep != "" { // to look at it
		b, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(keep, b, 0o644))
	}
}

// writePNG writes a small gradient PNG.
func writePNG(t testing.TB, path string) {
	m := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			m.Set(x, y, color.RGBA{uint8(6 * x), uint8(8 * y), 90, 255})
		}
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, png.Encode(f, m))
	require.NoError(t, f.Close())
}
