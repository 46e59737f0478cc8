package llama_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// Answer a conversation in one call: the checkpoint's chat template
// (tokenizer_config.json's chat_template) renders it, bos written once by
// the template, and the model continues it with the assistant's turn.
func ExampleTextGeneration_Chat() {
	dir := tinyCheckpoint()
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{
		"bos_token": "<s>", "eos_token": "</s>",
		"chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
	}`), 0o644)

	p, err := llama.LoadTextGeneration(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := []models.ChatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello"}}
	text, ids, err := p.ChatPrompt(context.Background(), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q starts with bos %d once: %v\n", text, ids[0], ids[1] != ids[0])

	cfg := p.Defaults()
	cfg.MaxNewTokens, cfg.Temperature = 5, 0
	answer, err := p.Chat(context.Background(), msgs, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d new tokens: %q\n", len(answer.Tokens), answer.Text)
	// Output:
	// "<s>[system] Be brief.</s>[user] Hello</s>[assistant]" starts with bos 1 once: true
	// 5 new tokens: "      , 2will\nbe obliquely "
}

// The n best continuations of beam search, with their scores.
func ExampleTextGeneration_NBest() {
	dir := tinyCheckpoint()
	defer os.RemoveAll(dir)
	p, err := llama.LoadTextGeneration(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, err := p.PromptIDs("Hello")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := p.Defaults()
	cfg.Beam, cfg.MaxNewTokens = 3, 4
	hyps, err := p.NBest(context.Background(), ids, cfg, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hyps {
		text, _ := p.Tokenizer.Decode(h.Tokens)
		fmt.Printf("%.3f %q\n", h.Score, text)
	}
	// Output:
	// -11.138 "aboutnearer       ure"
	// -11.948 "aboutnearer       Spirit "
}
