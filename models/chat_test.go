package models

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chatNow is the clock of tools/hftokenizers/chat_golden.py (NOW).
var chatNow = time.Date(2025, 3, 7, 9, 30, 0, 0, time.UTC)

// TestChatTemplateGolden renders the real chat templates of Llama 3.1,
// Llama 3.2, Qwen2, Qwen2.5 and SmolLM2 (testdata/chat, README.md there
// says where each came from) over several conversations and checks the
// text byte for byte against Python jinja2 in transformers' environment
// (tools/hftokenizers/chat_golden.py → testdata/chat/golden.json).
func TestChatTemplateGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/chat/golden.json")
	require.NoError(t, err)
	var g struct {
		Special map[string]map[string]string `json:"special_tokens"`
		Convs   map[string][]ChatMessage     `json:"conversations"`
		Cases   []struct {
			Template     string `json:"template"`
			Conversation string `json:"conversation"`
			AGP          bool   `json:"add_generation_prompt"`
			Text         string `json:"text"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	require.Len(t, g.Cases, 60)
	templates := map[string]*ChatTemplate{}
	for name, sp := range g.Special {
		src, err := os.ReadFile(filepath.Join("testdata/chat", name+".jinja"))
		require.NoError(t, err)
		special := map[string]any{}
		for k, v := range sp {
			special[k] = v
		}
		templates[name], err = NewChatTemplate(string(src), special)
		require.NoError(t, err, name)
	}
	for _, c := range g.Cases {
		got, err := templates[c.Template].Apply(context.Background(), g.Convs[c.Conversation], ChatOptions{AddGenerationPrompt: c.AGP, Now: chatNow})
		require.NoError(t, err, "%s %s %v", c.Template, c.Conversation, c.AGP)
		require.Equal(t, c.Text, got, "%s %s add_generation_prompt=%v", c.Template, c.Conversation, c.AGP)
	}
}

// TestLoadChatTemplate reads tokenizer_config.json's forms: a string
// template with AddedToken special tokens, a list of named templates, and
// none at all (ErrNoChatTemplate).
func TestLoadChatTemplate(t *testing.T) {
	write := func(t *testing.T, cfg string) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, TokenizerConfigFile), []byte(cfg), 0o644))
		return dir
	}
	msgs := []ChatMessage{{Role: "user", Content: "hi"}}
	cases := []struct {
		name, cfg, want, err string
	}{
		{"string", `{"chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}{{ eos_token }}{{ additional_special_tokens | join(',') }}",
			"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,
			"additional_special_tokens": ["<a>", {"content": "<b>"}]}`, "<s>[user:hi]</s><a>,<b>", ""},
		{"named", `{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D{{ messages | length }}"}]}`, "D1", ""},
		{"named without default", `{"chat_template": [{"name": "tool_use", "template": "T"}]}`, "", `no template named "default"`},
		{"none", `{"bos_token": "<s>"}`, "", "has no chat_template"},
		{"null", `{"chat_template": null}`, "", "has no chat_template"},
		{"bad token", `{"chat_template": "x", "bos_token": 3}`, "", "bos_token"},
		{"unknown statement", `{"chat_template": "{% include 'x' %}"}`, "", "include"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := LoadChatTemplate(write(t, c.cfg))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				if strings.Contains(c.err, "no chat_template") {
					require.ErrorIs(t, err, ErrNoChatTemplate)
				}
				return
			}
			require.NoError(t, err)
			got, err := tmpl.Apply(context.Background(), msgs, ChatOptions{})
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	_, err := LoadChatTemplate(t.TempDir())
	require.ErrorIs(t, err, ErrNoChatTemplate)
	require.ErrorContains(t, err, "no tokenizer_config.json")
}

// TestChatTemplateRefusals: what the renderer cannot do or end is an
// error naming it, at compile time or within the render's bounds.
func TestChatTemplateRefusals(t *testing.T) {
	compile := []struct{ name, src, err string }{
		{"recursive macro", `{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}`, "f refers to itself"},
		{"mutual recursion", `{% macro f() %}{{ g() }}{% endmacro %}{% macro g() %}{{ f() }}{% endmacro %}{{ f() }}`, "refers to itself (f → g → f)"},
		{"namespace holding itself", `{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns | tojson }}`, "ns refers to itself"},
		{"through an alias", `{% set ns = namespace(a=1) %}{% set other = ns %}{% set ns.a = other %}{{ ns }}`, "refers to itself"},
		{"append", `{% set l = [1] %}{% set _ = l.append(l) %}{{ l }}`, ".append()"},
		{"update", `{% set d = {} %}{{ d.update({'a': 1}) }}`, ".update()"},
		{"too long", strings.Repeat("x", MaxChatTemplateBytes+1), "models.MaxChatTemplateBytes"},
		{"unknown statement", `{% import 'x' as y %}`, "import"},
		{"percent formatting", `{{ "%d items" % messages|length }}`, "does not implement Python's %-formatting"},
		// jinja2 renders "A: x" and "   ": the library would drop the spaces.
		{"trim across a tag", `{%- if true -%}A: {{ "x" }}{%- endif -%}`, `line 1: the zoo's Jinja library (ardanlabs/jinja v1.8.0) trims the whitespace of the text "A: " to "A:"`},
		{"lstrip after a tag", `{{ "a" }}   {% if true %}{% endif %}`, `trims the whitespace of the text "   " to ""`},
	}
	for _, c := range compile {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewChatTemplate(c.src, nil)
			require.ErrorContains(t, err, c.err)
		})
	}
	// Templates real checkpoints carry pass the checks.
	for _, ok := range []string{
		`{% set ns = namespace(text='') %}{% for m in messages %}{% set ns.text = ns.text ~ m.content %}{% endfor %}{{ ns.text }}`,
		`{% set x = 'a' %}{% set x = x ~ 'b' %}{{ x }}`,
		`{% macro show(m) %}{{ m.content }}{% endmacro %}{% macro all() %}{% for m in messages %}{{ show(m) }}{% endfor %}{% endmacro %}{{ all() }}`,
		`{{ 'a.append(b)' }}{# l.append(x) #}`,
		`{% if loop.index0 % 2 == 0 %}{{ '100%' }}{% endif %}`,
		"A: {{ 'x' }}{% if true %}{% endif %}\n  {% if true %}\n{{ 'y' }}  {%- endif %}",
	} {
		_, err := NewChatTemplate(ok, nil)
		require.NoError(t, err, ok)
	}

	msgs := []ChatMessage{{Role: "user", Content: "hi"}}
	render := []struct {
		name, src string
		opts      ChatOptions
		msgs      []ChatMessage
		err       string
	}{
		{"raise_exception", `{% if messages[0].role != 'system' %}{{ raise_exception('Conversation must start with a system message') }}{% endif %}`, ChatOptions{}, msgs, "the template refused the conversation: Conversation must start with a system message"},
		{"range bound", `{% for i in range(1000000) %}{% endfor %}`, ChatOptions{}, msgs, "models.MaxChatRange"},
		{"slow", `{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}`, ChatOptions{Timeout: time.Millisecond}, msgs, "render did not end in 1ms"},
		{"tools", `x`, ChatOptions{Vars: map[string]any{"tools": []any{}}}, msgs, "tools (function calling) are not supported"},
		{"strftime directive", `{{ strftime_now('%G') }}`, ChatOptions{}, msgs, "directive %G is not supported"},
		{"no messages", `x`, ChatOptions{}, nil, "no messages"},
		{"no role", `x`, ChatOptions{}, []ChatMessage{{Content: "x"}}, "message 0 has no role"},
		{"too many messages", `x`, ChatOptions{}, make([]ChatMessage, MaxChatMessages+1), "models.MaxChatMessages"},
		{"too long", `x`, ChatOptions{}, []ChatMessage{{Role: "user", Content: strings.Repeat("x", MaxChatBytes)}}, "models.MaxChatBytes"},
	}
	for _, c := range render {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := NewChatTemplate(c.src, nil)
			require.NoError(t, err)
			start := time.Now()
			_, err = tmpl.Apply(context.Background(), c.msgs, c.opts)
			require.ErrorContains(t, err, c.err)
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
	tmpl, err := NewChatTemplate(`x`, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tmpl.Apply(ctx, msgs, ChatOptions{})
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
}

// TestChatTemplateVars: Vars reach the template (Llama 3.1's date_string
// wins over its default), and strftime_now reads ChatOptions.Now.
func TestChatTemplateVars(t *testing.T) {
	src, err := os.ReadFile("testdata/chat/meta-llama-Llama-3.1-8B-Instruct.jinja")
	require.NoError(t, err)
	tmpl, err := NewChatTemplate(string(src), map[string]any{"bos_token": "<|begin_of_text|>"})
	require.NoError(t, err)
	got, err := tmpl.Apply(context.Background(), []ChatMessage{{Role: "user", Content: "hi"}}, ChatOptions{Vars: map[string]any{"date_string": "01 Jan 2030"}})
	require.NoError(t, err)
	require.Contains(t, got, "Today Date: 01 Jan 2030\n")

	now, err := NewChatTemplate(`{{ strftime_now("%d %b %Y, %A %B %e %j %I%p %H:%M:%S %y %m %%") }}`, nil)
	require.NoError(t, err)
	got, err = now.Apply(context.Background(), []ChatMessage{{Role: "user"}}, ChatOptions{Now: time.Date(2024, 7, 5, 15, 4, 9, 0, time.UTC)})
	require.NoError(t, err)
	require.Equal(t, "05 Jul 2024, Friday July  5 187 03PM 15:04:09 24 07 %", got) // Python's strftime
}

// BenchmarkChatTemplateApply renders a 1,000-turn conversation (250
// words a turn) with each real template: docs/chat.md's measurement.
func BenchmarkChatTemplateApply(b *testing.B) {
	msgs := make([]ChatMessage, 1000)
	for i := range msgs {
		msgs[i] = ChatMessage{Role: []string{"user", "assistant"}[i%2], Content: strings.Repeat("word ", 50)}
	}
	for _, name := range []string{"meta-llama-Llama-3.2-3B-Instruct", "Qwen-Qwen2.5-7B-Instruct", "HuggingFaceTB-SmolLM2-135M-Instruct"} {
		b.Run(name, func(b *testing.B) {
			src, err := os.ReadFile(filepath.Join("testdata/chat", name+".jinja"))
			require.NoError(b, err)
			tmpl, err := NewChatTemplate(string(src), map[string]any{"bos_token": "<s>"})
			require.NoError(b, err)
			for b.Loop() {
				if _, err := tmpl.Apply(context.Background(), msgs, ChatOptions{AddGenerationPrompt: true, Now: chatNow}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestChatTemplateConcurrent: Apply from 8 goroutines at once gives each
// the text of a call alone (run with -race in CI).
func TestChatTemplateConcurrent(t *testing.T) {
	src, err := os.ReadFile("testdata/chat/meta-llama-Llama-3.2-3B-Instruct.jinja")
	require.NoError(t, err)
	tmpl, err := NewChatTemplate(string(src), map[string]any{"bos_token": "<|begin_of_text|>"})
	require.NoError(t, err)
	conv := func(i int) []ChatMessage {
		return []ChatMessage{{Role: "system", Content: strings.Repeat("s", i)}, {Role: "user", Content: strings.Repeat("u", i)}}
	}
	want := make([]string, 8)
	for i := range want {
		want[i], err = tmpl.Apply(context.Background(), conv(i), ChatOptions{AddGenerationPrompt: true, Now: chatNow})
		require.NoError(t, err)
	}
	got := make([]string, 8)
	errs := make([]error, 8)
	done := make(chan int)
	for i := range got {
		go func() {
			got[i], errs[i] = tmpl.Apply(context.Background(), conv(i), ChatOptions{AddGenerationPrompt: true, Now: chatNow})
			done <- i
		}()
	}
	for range got {
		<-done
	}
	for i := range got {
		require.NoError(t, errs[i])
		require.Equal(t, want[i], got[i])
	}
}
