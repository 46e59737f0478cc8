package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// stopList is a repeatable string flag: --stop S, once per stop string.
type stopList []string

func (s *stopList) String() string { return strings.Join(*s, ", ") }

func (s *stopList) Set(v string) error {
	if v == "" {
		return fmt.Errorf("a stop string must not be empty")
	}
	*s = append(*s, v)
	return nil
}

// generateLlama is zoo generate for a LLaMA-family checkpoint (llama,
// qwen2, mistral) in dir, through llama.TextGeneration: the checkpoint's
// settings (TextGeneration.Defaults: generation_config.json, its eos
// list) with the flags that are set on top, the prompt tokenized with the
// tokenizer's template (bos first where it adds it), the continuation
// streamed after the prompt as it is decoded (beam search's at its end).
// With --nbest N > 1 it prints the N best continuations of beam search,
// each after its score and a tab. With --chat the conversation (--system,
// --messages, --prompt as the last user turn) goes through the
// checkpoint's chat template (TextGeneration.ChatPrompt: its special
// tokens written by the template, none added) and the answer alone is
// printed.
func generateLlama(f *cmdFlags, dir, prompt string, fl generateFlags, seed uint64, stops []string, stdout io.Writer) error {
	set := f.isSet
	switch {
	case set("max-new-tokens") && (*fl.n < 1 || *fl.n > llama.MaxNewTokensLimit):
		return fmt.Errorf("%w: --max-new-tokens %d must be between 1 and %d (llama.MaxNewTokensLimit)", errUsage, *fl.n, llama.MaxNewTokensLimit)
	case !*fl.chat && (set("system") || set("messages")):
		return fmt.Errorf("%w: --system and --messages give a conversation: add --chat", errUsage)
	case *fl.chat && !set("prompt") && !set("messages"):
		return fmt.Errorf("%w: --chat needs the user's turn (--prompt) or a conversation (--messages FILE)", errUsage)
	}
	var messages []models.ChatMessage
	if *fl.chat {
		var err error
		if messages, err = chatMessages(*fl.messages, *fl.system, set("system"), prompt, set("prompt")); err != nil {
			return err
		}
	}
	p, err := llama.LoadTextGeneration(dir, models.WithWeightFormat(fl.weights))
	if err != nil {
		return err
	}
	cfg := p.Defaults()
	if set("max-new-tokens") {
		cfg.MaxNewTokens, cfg.MaxLength = *fl.n, 0
	}
	if set("temperature") {
		cfg.Temperature = *fl.temp
	}
	if set("top-k") {
		cfg.TopK = *fl.topK
	}
	if set("top-p") {
		cfg.TopP = *fl.topP
	}
	if set("seed") {
		cfg.Seed = seed
	}
	if set("beam") {
		cfg.Beam = *fl.beam
	}
	if set("length-penalty") {
		cfg.LengthPenalty = *fl.alpha
	}
	if set("length-penalty-style") || set("length-penalty") {
		if cfg.LengthPenaltyStyle, err = decode.ParseLengthPenaltyStyle(*fl.style); err != nil {
			return fmt.Errorf("%w: --length-penalty-style: %v", errUsage, err)
		}
	}
	if set("early-stopping") {
		if cfg.EarlyStopping, err = decode.ParseStopping(*fl.stopping); err != nil {
			return fmt.Errorf("%w: --early-stopping: %v", errUsage, err)
		}
	}
	if set("repetition-penalty") {
		cfg.RepetitionPenalty = *fl.rep
	}
	cfg.NoCache = *fl.noCache
	nbest := 1
	if set("nbest") {
		nbest = *fl.nbest
	} else if p.Generation.NumReturnSequences != nil {
		nbest = *p.Generation.NumReturnSequences
	}
	if nbest > 1 && (cfg.Beam < 2 || nbest > cfg.Beam) {
		return fmt.Errorf("%w: --nbest %d needs beam search with at least as many beams (--beam, or the checkpoint's num_beams): --beam is %d", errUsage, nbest, cfg.Beam)
	}
	cfg.StopStrings, cfg.NewTextOnly = stops, true
	ctx, stop := signalContext()
	defer stop()
	if nbest > 1 {
		return printNBest(ctx, p, messages, prompt, cfg, nbest, stdout)
	}
	cfg.OnText = func(_ int, piece string) { fmt.Fprint(stdout, piece) }
	if messages != nil {
		_, err = p.Chat(ctx, messages, cfg)
	} else {
		fmt.Fprint(stdout, prompt)
		_, err = p.Generate(ctx, []string{prompt}, cfg)
	}
	fmt.Fprintln(stdout)
	return err
}

// printNBest prints the n best continuations of the prompt (or the
// chat's answers), best first, each as its score, a tab and the text.
func printNBest(ctx context.Context, p *llama.TextGeneration, messages []models.ChatMessage, prompt string, cfg models.TextGenerationConfig, n int, stdout io.Writer) error {
	var ids []int
	var err error
	if messages != nil {
		_, ids, err = p.ChatPrompt(ctx, messages)
		prompt = ""
	} else {
		ids, err = p.PromptIDs(prompt)
	}
	if err != nil {
		return err
	}
	hyps, err := p.NBest(ctx, ids, cfg, n)
	if err != nil {
		return err
	}
	for _, h := range hyps {
		text, err := models.Continuation(p.Tokenizer, ids, h.Tokens)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%.4f\t%s%s\n", h.Score, prompt, text)
	}
	return nil
}

// maxMessagesFile bounds the size of a --messages file.
const maxMessagesFile = models.MaxChatBytes + 1<<20

// chatMessages is zoo generate --chat's conversation: the --messages
// file's turns (a JSON list of {"role", "content"}), or a --system turn,
// then --prompt as a user turn where it is given.
func chatMessages(file, system string, hasSystem bool, prompt string, hasPrompt bool) ([]models.ChatMessage, error) {
	var msgs []models.ChatMessage
	if file != "" {
		if hasSystem {
			return nil, fmt.Errorf("%w: --system with --messages: put the system turn in the file", errUsage)
		}
		fi, err := os.Stat(file)
		if err != nil {
			return nil, fmt.Errorf("--messages: %w", err)
		}
		if fi.Size() > maxMessagesFile {
			return nil, fmt.Errorf("--messages %s: %d bytes is more than %d", file, fi.Size(), maxMessagesFile)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--messages: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&msgs); err != nil {
			return nil, fmt.Errorf("--messages %s: want a JSON list of {\"role\": …, \"content\": …}: %w", file, err)
		}
		for i, m := range msgs {
			if m.Role == "" {
				return nil, fmt.Errorf("--messages %s: message %d has no role", file, i)
			}
		}
	} else if hasSystem {
		msgs = append(msgs, models.ChatMessage{Role: "system", Content: system})
	}
	if hasPrompt {
		msgs = append(msgs, models.ChatMessage{Role: "user", Content: prompt})
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: --chat: the conversation is empty", errUsage)
	}
	return msgs, nil
}
