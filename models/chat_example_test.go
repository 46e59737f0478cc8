package models_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/d73a19ff/zoo/models"
)

// A chat template renders a conversation as the model was trained to read
// it; AddGenerationPrompt ends it with the assistant's header. Load one
// from a checkpoint with models.LoadChatTemplate(dir).
func ExampleChatTemplate_Apply() {
	const smolLM2 = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}" +
		"{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}" +
		"{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
		"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
	tmpl, err := models.NewChatTemplate(smolLM2, map[string]any{"eos_token": "<|im_end|>"})
	if err != nil {
		log.Fatal(err)
	}
	text, err := tmpl.Apply(context.Background(), []models.ChatMessage{
		{Role: "user", Content: "What is the capital of France?"},
	}, models.ChatOptions{AddGenerationPrompt: true, Now: time.Date(2025, 3, 7, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(text)
	// Output:
	// <|im_start|>system
	// You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>
	// <|im_start|>user
	// What is the capital of France?<|im_end|>
	// <|im_start|>assistant
}

// LoadChatTemplate reads tokenizer_config.json; a base model has none.
func ExampleLoadChatTemplate() {
	_, err := models.LoadChatTemplate("testdata/no-such-checkpoint")
	fmt.Println(errors.Is(err, models.ErrNoChatTemplate))
	// Output: true
}
