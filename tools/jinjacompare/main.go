// Command jinjacompare measures the Go Jinja libraries considered for the
// zoo's chat templates (docs/chat.md) on the real templates of
// models/testdata/chat: correctness against transformers' rendering
// (golden.json, tools/hftokenizers/chat_golden.py), the edge cases where
// they differ from Python's jinja2, and the render time of a 1,000-turn
// conversation. It is a module of its own, so that the libraries not
// chosen stay out of the zoo's go.mod. Run from this folder:
//
//	go run . [-reps 20]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	ardan "github.com/ardanlabs/jinja"
	gonja "github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

var dir = filepath.Join("..", "..", "models", "testdata", "chat")

type renderer struct {
	name    string
	compile func(src string) (func(data map[string]any) (string, error), error)
}

// render compiles src and renders it once.
func (r renderer) render(src string, data map[string]any) (string, error) {
	f, err := r.compile(src)
	if err != nil {
		return "", err
	}
	return f(data)
}

var libs = []renderer{
	{"ardanlabs/jinja v1.8.0", func(src string) (func(map[string]any) (string, error), error) {
		t, err := ardan.Compile(src)
		if err != nil {
			return nil, err
		}
		return func(data map[string]any) (string, error) {
			vals := map[string]ardan.Value{}
			for k, v := range data {
				vals[k] = ardan.FromGoValue(v)
			}
			vals["strftime_now"] = ardan.NewCallable("strftime_now", func([]ardan.Value, map[string]ardan.Value) (ardan.Value, error) {
				return ardan.NewString("07 Mar 2025"), nil
			})
			return t.RenderValues(vals)
		}, nil
	}},
	{"nikolalohinski/gonja/v2 v2.9.1", func(src string) (func(map[string]any) (string, error), error) {
		cfg := config.New()
		cfg.TrimBlocks, cfg.LeftStripBlocks = true, true
		t, err := exec.NewTemplate("/t", cfg, loaders.MustNewMemoryLoader(map[string]string{"/t": src}), gonja.DefaultEnvironment)
		if err != nil {
			return nil, err
		}
		return func(data map[string]any) (string, error) {
			ctx := exec.NewContext(data)
			ctx.Set("strftime_now", func(string) string { return "07 Mar 2025" })
			ctx.Set("raise_exception", func(m string) (string, error) { return "", fmt.Errorf("%s", m) })
			return t.ExecuteToString(ctx)
		}, nil
	}},
}

func main() {
	reps := flag.Int("reps", 20, "renders per timing")
	flag.Parse()
	var g struct {
		Special map[string]map[string]string `json:"special_tokens"`
		Convs   map[string][]map[string]any  `json:"conversations"`
		Cases   []struct {
			Template, Conversation string
			AGP                    bool `json:"add_generation_prompt"`
			Text                   string
		} `json:"cases"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		log.Fatal(err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		log.Fatal(err)
	}
	fmt.Println("golden renderings equal byte for byte:")
	for _, l := range libs {
		ok := 0
		for _, c := range g.Cases {
			src, _ := os.ReadFile(filepath.Join(dir, c.Template+".jinja"))
			data := map[string]any{"messages": g.Convs[c.Conversation], "add_generation_prompt": c.AGP, "tools": nil, "documents": nil}
			for k, v := range g.Special[c.Template] {
				data[k] = v
			}
			if out, err := l.render(string(src), data); err == nil && out == c.Text {
				ok++
			}
		}
		fmt.Printf("  %-32s %d of %d\n", l.name, ok, len(g.Cases))
	}

	// Python's jinja2 (transformers' environment) gives the "want" column.
	edges := []struct{ src, want string }{
		{`{{ x | tojson }}`, `{"a": [1, "é"]}`},
		{`{% if tools is defined %}defined{% endif %}{% if tools is none %} none{% endif %}`, "defined none"},
		{`{{ 1.0 }} {{ [1, "a"] }}`, "1.0 [1, 'a']"},
		{`{{ "%d items" % 3 }}`, "3 items"},
		{`{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}`, "012"},
		{`{{ undefined_name.attr }}`, "error: 'undefined_name' is undefined"},
	}
	fmt.Println("edge cases (want: Python jinja2 in transformers' environment):")
	for _, e := range edges {
		fmt.Printf("  %s\n    want %q\n", e.src, e.want)
		for _, l := range libs {
			out, err := l.render(e.src, map[string]any{"x": map[string]any{"a": []any{1, "é"}}, "tools": nil})
			if err != nil {
				out = "error: " + strings.SplitN(err.Error(), "\n", 2)[0]
			}
			fmt.Printf("    %-32s %q\n", l.name, out)
		}
	}

	var msgs []any
	for i := 0; i < 1000; i++ {
		role := []string{"user", "assistant"}[i%2]
		msgs = append(msgs, map[string]any{"role": role, "content": strings.Repeat("word ", 50)})
	}
	names := []string{"meta-llama-Llama-3.2-3B-Instruct", "Qwen-Qwen2.5-7B-Instruct", "HuggingFaceTB-SmolLM2-135M-Instruct"}
	fmt.Printf("render time of a 1,000-turn conversation (250 words a turn), compiled once, median of %d:\n", *reps)
	for _, name := range names {
		src, _ := os.ReadFile(filepath.Join(dir, name+".jinja"))
		data := map[string]any{"messages": msgs, "add_generation_prompt": true, "tools": nil, "documents": nil, "bos_token": "<s>"}
		fmt.Printf("  %s\n", name)
		for _, l := range libs {
			render, err := l.compile(string(src))
			if err != nil {
				log.Fatalf("%s: %v", l.name, err)
			}
			var times []time.Duration
			n := 0
			for i := 0; i < *reps; i++ {
				start := time.Now()
				out, err := render(data)
				if err != nil {
					log.Fatalf("%s: %v", l.name, err)
				}
				times = append(times, time.Since(start))
				n = len(out)
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			fmt.Printf("    %-32s %7.2f ms (%d bytes; min %.2f, max %.2f)\n", l.name, ms(times[len(times)/2]), n, ms(times[0]), ms(times[len(times)-1]))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
