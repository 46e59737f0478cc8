package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// This file applies a checkpoint's chat template (tokenizer_config.json's
// chat_template) as transformers' apply_chat_template renders it; see
// docs/chat.md for the Jinja library chosen, and why.

// TokenizerConfigFile is the name of Hugging Face's tokenizer_config.json,
// which holds the chat template and the special tokens' texts.
const TokenizerConfigFile = "tokenizer_config.json"

// Bounds that LoadChatTemplate, NewChatTemplate and Apply check before
// rendering, so that a template or a conversation cannot take unbounded
// time or memory.
const (
	// MaxChatTemplateBytes bounds a template's source (Llama 3.1's is
	// 4.6 KB; the largest published ones are tens of KB).
	MaxChatTemplateBytes = 256 << 10
	// MaxChatMessages bounds the turns of one conversation.
	MaxChatMessages = 10000
	// MaxChatBytes bounds a conversation's text: its roles and contents
	// together, and the rendered text.
	MaxChatBytes = MaxPredictTextBytes
	// MaxChatRange is the longest range() a template may build, as
	// Jinja's sandbox (MAX_RANGE) bounds it.
	MaxChatRange = 100000
	// DefaultChatTimeout bounds a render when ChatOptions.Timeout is 0.
	DefaultChatTimeout = 10 * time.Second
)

// ErrNoChatTemplate is wrapped by the error of LoadChatTemplate for a
// checkpoint whose tokenizer_config.json has no chat_template (or that has
// no tokenizer_config.json): a base model, not a chat model.
var ErrNoChatTemplate = errors.New("no chat template")

// ChatMessage is one turn of a conversation, as Hugging Face's messages
// hold it: {"role": "system"|"user"|"assistant"|…, "content": text}.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatOptions set ChatTemplate.Apply.
type ChatOptions struct {
	// AddGenerationPrompt ends the text with the header of an assistant
	// turn (apply_chat_template's add_generation_prompt), so that a model
	// continues it with its answer.
	AddGenerationPrompt bool
	// Now is the clock of the template's strftime_now (Llama 3.2 writes
	// today's date); the zero value reads time.Now.
	Now time.Time
	// Vars are more variables for the template (apply_chat_template's
	// keyword arguments, e.g. Llama 3's date_string): strings, numbers,
	// bools, and slices and maps of them. They may not be messages,
	// add_generation_prompt, tools or documents.
	Vars map[string]any
	// Timeout bounds the render: 0 is DefaultChatTimeout. A render that
	// runs past it, or past ctx, is an error; the render itself goes on
	// in the background until it ends (the Jinja library has no way to
	// stop it), which the template checks and range's bound keep short.
	Timeout time.Duration
}

// ChatTemplate is a compiled chat template with the special tokens it may
// write (bos_token, eos_token, …, from tokenizer_config.json). Apply is
// safe for concurrent use.
type ChatTemplate struct {
	// Source is the template's Jinja text.
	Source string
	// SpecialTokens are the template's variables bos_token, eos_token,
	// unk_token, sep_token, pad_token, cls_token and mask_token (strings)
	// and additional_special_tokens (a []string), those set: transformers'
	// special_tokens_map.
	SpecialTokens map[string]any

	compiled *jinja.Template
}

// specialTokenKeys are the keys of tokenizer_config.json that
// transformers' special_tokens_map passes to a chat template.
var specialTokenKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// LoadChatTemplate reads the chat template of the checkpoint in dir from
// its tokenizer_config.json: chat_template (a string, or a list of
// {"name", "template"} of which "default" is taken) and the special
// tokens' texts (a string or an AddedToken {"content": …}). A checkpoint
// without one is an error wrapping ErrNoChatTemplate; a template that
// NewChatTemplate refuses is an error naming what it cannot do.
func LoadChatTemplate(dir string) (*ChatTemplate, error) {
	path := filepath.Join(dir, TokenizerConfigFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint %s has no %s, so %w: it is not a chat model (or its tokenizer_config.json is missing)", dir, TokenizerConfigFile, ErrNoChatTemplate)
	}
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("chat template: %s: %w", path, err)
	}
	src, err := templateSource(raw["chat_template"])
	if err != nil {
		return nil, fmt.Errorf("chat template: %s: chat_template: %w", path, err)
	}
	if src == "" {
		// transformers ≥ 4.43 may keep the template beside the file.
		if j, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
			src = string(j)
		}
	}
	if src == "" {
		return nil, fmt.Errorf("checkpoint %s: %s has no chat_template, so %w: it is not a chat model; give the text itself (no --chat)", dir, TokenizerConfigFile, ErrNoChatTemplate)
	}
	special := map[string]any{}
	for _, k := range specialTokenKeys {
		s, ok, err := tokenText(raw[k])
		if err != nil {
			return nil, fmt.Errorf("chat template: %s: %s: %w", path, k, err)
		}
		if ok {
			special[k] = s
		}
	}
	if v, ok := raw["additional_special_tokens"]; ok && !isJSONNull(v) {
		var list []json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, fmt.Errorf("chat template: %s: additional_special_tokens: want a list of tokens: %w", path, err)
		}
		var texts []string
		for i, e := range list {
			s, ok, err := tokenText(e)
			if err != nil || !ok {
				return nil, fmt.Errorf("chat template: %s: additional_special_tokens[%d]: want a token's text", path, i)
			}
			texts = append(texts, s)
		}
		special["additional_special_tokens"] = texts
	}
	t, err := NewChatTemplate(src, special)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return t, nil
}

// templateSource is chat_template's text: a string, or the "default" of a
// list of named templates; "" when it is absent or null.
func templateSource(v json.RawMessage) (string, error) {
	if len(v) == 0 || isJSONNull(v) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(v, &named); err != nil {
		return "", fmt.Errorf("want a string or a list of {\"name\", \"template\"}")
	}
	var names []string
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
		names = append(names, n.Name)
	}
	return "", fmt.Errorf("no template named \"default\" among %q; the zoo applies the default one", names)
}

// tokenText is a special token's text: a string, or an AddedToken's
// {"content": …}; ok is false for null or absence.
func tokenText(v json.RawMessage) (s string, ok bool, err error) {
	if len(v) == 0 || isJSONNull(v) {
		return "", false, nil
	}
	if err := json.Unmarshal(v, &s); err == nil {
		return s, true, nil
	}
	var added struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(v, &added); err != nil || added.Content == nil {
		return "", false, fmt.Errorf("want a string or {\"content\": string}")
	}
	return *added.Content, true, nil
}

func isJSONNull(v json.RawMessage) bool { return strings.TrimSpace(string(v)) == "null" }

// NewChatTemplate compiles a chat template (Jinja, as transformers reads
// it: trim_blocks, lstrip_blocks, loop controls) with the special tokens
// it may write (see ChatTemplate.SpecialTokens). A source over
// MaxChatTemplateBytes is an error, and so is one that uses what the zoo
// does not render: a statement the library lacks (include, import,
// extends, call, …, named in the error), Python's %-formatting of a
// string literal ('%d' % n, which the library gets wrong), list and dict
// methods that
// modify them (append, update, …: transformers' ImmutableSandboxedEnvironment
// forbids them too), and macros or namespace attributes that refer to
// themselves (recursion the renderer could not end).
func NewChatTemplate(source string, special map[string]any) (*ChatTemplate, error) {
	if len(source) > MaxChatTemplateBytes {
		return nil, fmt.Errorf("chat template: %d bytes is more than %d (models.MaxChatTemplateBytes)", len(source), MaxChatTemplateBytes)
	}
	if err := checkTemplate(source); err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	c, err := jinja.Compile(source)
	if err != nil {
		return nil, fmt.Errorf("chat template: the zoo's Jinja renderer cannot read it: %w", err)
	}
	for k, v := range special {
		switch v.(type) {
		case string, []string:
		default:
			return nil, fmt.Errorf("chat template: special token %s is a %T; want a string (or a []string for additional_special_tokens)", k, v)
		}
	}
	return &ChatTemplate{Source: source, SpecialTokens: special, compiled: c}, nil
}

// reservedChatVars are the variables Apply sets itself or refuses.
var reservedChatVars = map[string]string{
	"messages":              "Apply's messages",
	"add_generation_prompt": "ChatOptions.AddGenerationPrompt",
	"tools":                 "tools (function calling) are not supported by the zoo's chat templates",
	"documents":             "documents (retrieval) are not supported by the zoo's chat templates",
	"strftime_now":          "ChatOptions.Now",
	"range":                 "the template's range()",
	"raise_exception":       "the template's raise_exception()",
}

// Apply renders the conversation as transformers'
// tokenizer.apply_chat_template(messages, tokenize=False,
// add_generation_prompt=…) does: the variables messages (a list of
// {"role", "content"}), add_generation_prompt, tools and documents (none),
// the special tokens, opts.Vars, and the functions raise_exception
// (its message becomes the error) and strftime_now (opts.Now). The text
// already holds whatever special tokens the template writes (Llama 3's
// bos_token): tokenize it without adding them again.
//
// More than MaxChatMessages messages, or more than MaxChatBytes of text,
// is an error before rendering; so is a render past opts.Timeout or ctx.
func (t *ChatTemplate) Apply(ctx context.Context, messages []ChatMessage, opts ChatOptions) (string, error) {
	if t == nil || t.compiled == nil {
		return "", fmt.Errorf("chat template: none loaded: make one with LoadChatTemplate or NewChatTemplate")
	}
	if len(messages) == 0 {
		return "", fmt.Errorf("chat template: no messages")
	}
	if len(messages) > MaxChatMessages {
		return "", fmt.Errorf("chat template: %d messages is more than %d (models.MaxChatMessages)", len(messages), MaxChatMessages)
	}
	size := 0
	list := make([]jinja.Value, len(messages))
	for i, m := range messages {
		if m.Role == "" {
			return "", fmt.Errorf("chat template: message %d has no role (system, user, assistant)", i)
		}
		size += len(m.Role) + len(m.Content)
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		list[i] = d
	}
	if size > MaxChatBytes {
		return "", fmt.Errorf("chat template: the conversation has %d bytes, more than %d (models.MaxChatBytes)", size, MaxChatBytes)
	}
	vars := make(map[string]jinja.Value, len(t.SpecialTokens)+len(opts.Vars)+8)
	for k, v := range t.SpecialTokens {
		vars[k] = jinja.FromGoValue(v)
	}
	keys := make([]string, 0, len(opts.Vars))
	for k := range opts.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if why, ok := reservedChatVars[k]; ok {
			return "", fmt.Errorf("chat template: variable %q cannot be set in ChatOptions.Vars: %s", k, why)
		}
		vars[k] = jinja.FromGoValue(opts.Vars[k])
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	vars["messages"] = jinja.NewList(list)
	vars["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	vars["tools"] = jinja.None()
	vars["documents"] = jinja.None()
	vars["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), fmt.Errorf("strftime_now takes one format string")
		}
		s, err := Strftime(now, args[0].AsString())
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(s), nil
	})
	vars["range"] = jinja.NewCallable("range", boundedRange)
	vars["raise_exception"] = jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := "raise_exception"
		if len(args) > 0 {
			msg = args[0].String()
			if args[0].IsString() {
				msg = args[0].AsString()
			}
		}
		return jinja.Undefined(), &TemplateError{Message: msg}
	})

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultChatTimeout
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1) // the render never blocks on sending, even once Apply has returned
	go func() {
		s, err := t.compiled.RenderValues(vars)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			var te *TemplateError
			if errors.As(r.err, &te) {
				return "", fmt.Errorf("chat template: the template refused the conversation: %w", r.err)
			}
			return "", fmt.Errorf("chat template: render: %w", r.err)
		}
		if len(r.text) > MaxChatBytes {
			return "", fmt.Errorf("chat template: the rendered text has %d bytes, more than %d (models.MaxChatBytes)", len(r.text), MaxChatBytes)
		}
		return r.text, nil
	case <-ctx.Done():
		return "", fmt.Errorf("chat template: render did not end in %v: %w", timeout, ctx.Err())
	}
}

// TemplateError is the error a template raises with raise_exception (e.g.
// "Conversation roles must alternate user/assistant/user/assistant/...").
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string { return e.Message }

// boundedRange is Jinja's range as its sandbox bounds it (MAX_RANGE).
func boundedRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var n [3]int64
	for i, a := range args {
		if i >= 3 || !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range takes one to three integers")
		}
		n[i] = a.AsInt()
	}
	start, stop, step := int64(0), int64(0), int64(1)
	switch len(args) {
	case 1:
		stop = n[0]
	case 2:
		start, stop = n[0], n[1]
	case 3:
		start, stop, step = n[0], n[1], n[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range takes one to three integers")
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range: step must not be zero")
	}
	count := int64(0)
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		count = (start - stop - step - 1) / -step
	}
	if count > MaxChatRange || count < 0 {
		return jinja.Undefined(), fmt.Errorf("range of %d items is more than %d (models.MaxChatRange, as Jinja's sandbox bounds it)", count, MaxChatRange)
	}
	items := make([]jinja.Value, count)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// Strftime formats t as Python's datetime.strftime(format) does for the
// directives chat templates use (%d %b %B %Y %y %m %H %M %S %a %A %j %p
// %I %e %%); another directive is an error naming it.
func Strftime(t time.Time, format string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i++; i == len(format) {
			return "", fmt.Errorf("strftime_now: format %q ends with a lone %%", format)
		}
		switch format[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'b':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Month().String())
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("strftime_now: directive %%%c is not supported by the zoo; use one of %%d %%e %%b %%B %%Y %%y %%m %%H %%I %%p %%M %%S %%a %%A %%j %%%%", format[i])
		}
	}
	return b.String(), nil
}

// checkTemplate refuses, by reading the template's tags, what the zoo's
// renderer would get wrong or could not end: list and dict methods that
// modify them (transformers' ImmutableSandboxedEnvironment refuses them
// as well), and macros or assigned values that refer to themselves,
// directly or through others (recursion, or a namespace holding itself,
// which the renderer would follow without end).
func checkTemplate(src string) error {
	if err := checkTrimming(src); err != nil {
		return err
	}
	tags := templateTags(src)
	refs := map[string][]string{} // name → the names its body or value refers to
	var macro string              // the macro whose body is being read
	for _, tag := range tags {
		code := stripStrings(tag.code)
		if percentFormat.MatchString(code) {
			return fmt.Errorf("%s (line %d) formats a string with %% ('…' %% value): the zoo's Jinja renderer does not implement Python's %%-formatting; join with ~ instead", tag.kind, tag.line)
		}
		for _, m := range mutators {
			if strings.Contains(code, "."+m+"(") {
				return fmt.Errorf("%s (line %d) calls .%s(): lists and dicts are immutable in chat templates (transformers' ImmutableSandboxedEnvironment refuses it too)", tag.kind, tag.line, m)
			}
		}
		if tag.kind != "statement" {
			if macro != "" {
				refs[macro] = append(refs[macro], identifiers(code, true)...)
			}
			continue
		}
		words := strings.Fields(code)
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "macro":
			name, _, _ := strings.Cut(strings.TrimPrefix(code, "macro"), "(")
			macro = strings.TrimSpace(name)
			refs[macro] = append(refs[macro], identifiers(strings.TrimPrefix(code, "macro "+macro), true)...)
		case "endmacro":
			macro = ""
		case "set":
			lhs, rhs, ok := strings.Cut(strings.TrimPrefix(code, "set"), "=")
			if !ok {
				continue // a block set: {% set x %}…{% endset %}, a string
			}
			target := strings.TrimSpace(lhs)
			base, _, isAttr := strings.Cut(target, ".")
			ids := identifiers(rhs, isAttr)
			if !isAttr {
				// Rebinding x = x ~ "…" makes a new value; only what it
				// holds of other names can come back to it.
				ids = slices.DeleteFunc(ids, func(s string) bool { return s == base })
			}
			refs[strings.TrimSpace(base)] = append(refs[strings.TrimSpace(base)], ids...)
			if macro != "" {
				refs[macro] = append(refs[macro], identifiers(rhs, true)...)
			}
		default:
			if macro != "" {
				refs[macro] = append(refs[macro], identifiers(code, true)...)
			}
		}
	}
	// A cycle among the names is recursion the renderer cannot end.
	state := map[string]int{} // 1 on the path, 2 done
	var path []string
	var visit func(n string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			i := slices.Index(path, n)
			return fmt.Errorf("%s refers to itself (%s): a recursive macro or a value that holds itself, which the zoo's Jinja renderer cannot bound (tool-use templates walk JSON schemas this way; the zoo renders no tools)", n, strings.Join(append(path[i:], n), " → "))
		case 2:
			return nil
		}
		state[n] = 1
		path = append(path, n)
		for _, m := range refs[n] {
			if _, known := refs[m]; known {
				if err := visit(m); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = 2
		return nil
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := visit(n); err != nil {
			return err
		}
	}
	return nil
}

// percentFormat finds a string literal (emptied by stripStrings) followed
// by the % operator.
var percentFormat = regexp.MustCompile(`['"]\s*%`)

// mutators are the list and dict methods that modify them.
var mutators = []string{"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem", "sort", "reverse"}

type templateTag struct {
	kind string // "statement" ({% %}) or "expression" ({{ }})
	code string // the tag's inside, without its delimiters and - or + marks
	line int
}

// templateTags are the {% %} and {{ }} tags of src, in order, with
// comments and raw blocks left out.
func templateTags(src string) []templateTag {
	var tags []templateTag
	for i := 0; i < len(src)-1; {
		open := src[i : i+2]
		var end, kind string
		switch open {
		case "{%":
			end, kind = "%}", "statement"
		case "{{":
			end, kind = "}}", "expression"
		case "{#":
			end = "#}"
		default:
			i++
			continue
		}
		j := closeTag(src, i+2, end)
		if j < 0 {
			return tags
		}
		if kind != "" {
			code := strings.Trim(src[i+2:j], "-+ \t\r\n")
			line := 1 + strings.Count(src[:i], "\n")
			if kind == "statement" && (code == "raw" || strings.HasPrefix(code, "raw ")) {
				if k := strings.Index(src[j:], "endraw"); k >= 0 {
					i = j + k
					continue
				}
			}
			tags = append(tags, templateTag{kind, code, line})
		}
		i = j + 2
	}
	return tags
}

// closeTag is the index of end in src from i, outside string literals; -1
// if there is none.
func closeTag(src string, i int, end string) int {
	var quote byte
	for ; i < len(src)-1; i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			if end != "#}" {
				quote = c
			}
		case src[i:i+2] == end:
			return i
		}
	}
	return -1
}

// stripStrings is code with its string literals emptied.
func stripStrings(code string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
				b.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// identifiers are the names code refers to, its strings left out: those
// used bare (not read through . or [ ]) and, with calls, those called.
func identifiers(code string, calls bool) []string {
	code = stripStrings(code)
	var out []string
	for i := 0; i < len(code); {
		c := code[i]
		if !isIdentStart(c) || i > 0 && (code[i-1] == '.' || isIdentByte(code[i-1])) {
			i++
			continue
		}
		j := i
		for j < len(code) && isIdentByte(code[j]) {
			j++
		}
		name := code[i:j]
		k := j
		for k < len(code) && code[k] == ' ' {
			k++
		}
		next := byte(0)
		if k < len(code) {
			next = code[k]
		}
		switch {
		case next == '(':
			if calls {
				out = append(out, name)
			}
		case next == '.' || next == '[':
		default:
			out = append(out, name)
		}
		i = j
	}
	return out
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentByte(c byte) bool  { return isIdentStart(c) || '0' <= c && c <= '9' }
