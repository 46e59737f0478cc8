package llama

import (
	"context"
	"errors"
	"fmt"

	"github.com/d73a19ff/zoo/models"
)

// This file is the text-generation pipeline's chat: a conversation
// rendered by the checkpoint's chat template (tokenizer_config.json's
// chat_template, models.ChatTemplate) and continued by the model, as
// transformers' pipeline("text-generation") does when given messages.

// ChatPrompt renders messages with the checkpoint's chat template and the
// assistant's header after them (add_generation_prompt=True), and
// tokenizes the text without adding special tokens: the template writes
// those it wants (Llama 3's bos_token), as
// apply_chat_template(tokenize=True) does. It returns the text and its
// ids. A checkpoint without a template is an error wrapping
// models.ErrNoChatTemplate.
func (t *TextGeneration) ChatPrompt(ctx context.Context, messages []models.ChatMessage) (string, []int, error) {
	if t.ChatTemplate == nil {
		if t.chatErr != nil {
			return "", nil, fmt.Errorf("llama: chat: %w", t.chatErr)
		}
		return "", nil, fmt.Errorf("llama: chat: the checkpoint has %w (tokenizer_config.json's chat_template): it is a base model; continue a text with Generate", models.ErrNoChatTemplate)
	}
	if t.Tokenizer == nil {
		return "", nil, fmt.Errorf("llama: chat needs a tokenizer")
	}
	text, err := t.ChatTemplate.Apply(ctx, messages, models.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		return "", nil, fmt.Errorf("llama: %w", err)
	}
	ids, err := t.Tokenizer.Encode(text)
	if err != nil {
		return "", nil, fmt.Errorf("llama: chat: tokenize the rendered conversation: %w", err)
	}
	if len(ids) == 0 {
		return "", nil, fmt.Errorf("llama: chat: the chat template rendered the conversation as no tokens")
	}
	return text, ids, nil
}

// Chat continues a conversation with the assistant's answer: ChatPrompt's
// ids decoded as Generate decodes a prompt (cfg, from Defaults, as for
// Generate; OnText streams the answer, its prompt index 0). The answer
// ends at one of cfg.EOS (Llama 3's <|eot_id|>, Qwen2's <|im_end|>, from
// generation_config.json), which is left out. Generated.Text is the
// answer alone (the pipeline's return_full_text=False whatever
// cfg.NewTextOnly says). Safe for concurrent use, as Generate.
func (t *TextGeneration) Chat(ctx context.Context, messages []models.ChatMessage, cfg TextGenerationConfig) (Generated, error) {
	if t.Model == nil {
		return Generated{}, fmt.Errorf("llama: chat needs a model")
	}
	if err := checkGenerateConfig(cfg); err != nil {
		return Generated{}, err
	}
	_, ids, err := t.ChatPrompt(ctx, messages)
	if err != nil {
		return Generated{}, err
	}
	toks, err := t.generate(ctx, [][]int{ids}, 0, cfg)
	if err != nil {
		return Generated{}, err
	}
	text, err := models.Continuation(t.Tokenizer, ids, toks[0])
	if err != nil {
		return Generated{}, fmt.Errorf("llama: chat: decode the answer: %w", err)
	}
	return Generated{Text: text, Tokens: toks[0]}, nil
}

// loadChatTemplate reads dir's chat template for TextGeneration: nil
// without an error for a checkpoint that has none (a base model), and
// the error, kept for Chat, for one the zoo cannot render.
func loadChatTemplate(dir string) (*models.ChatTemplate, error) {
	tmpl, err := models.LoadChatTemplate(dir)
	if errors.Is(err, models.ErrNoChatTemplate) {
		return nil, nil
	}
	return tmpl, err
}
