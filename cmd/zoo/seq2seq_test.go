package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	enNumbers = []string{"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	deNumbers = []string{"eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn"}
)

// numberPairs writes English→German number phrases, plus a line without a
// tab and a blank line, which reading must count and skip.
func numberPairs(t *testing.T, path string) {
	var b strings.Builder
	for i := 0; i < 300; i++ {
		a, c := i%10, (i/10)%10
		fmt.Fprintf(&b, "%s %s\t%s %s\n", enNumbers[a], enNumbers[c], deNumbers[a], deNumbers[c])
	}
	b.WriteString("a line without a tab\n\n")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// The seq2seq CLI end to end on generated data: denoising pretraining,
// translation fine-tuning from it, translate with an attention map, eval,
// and the bad inputs that must be clear errors.
func TestSeq2SeqCLI(t *testing.T) {
	dir := t.TempDir()
	tsv := filepath.Join(dir, "pairs.tsv")
	numberPairs(t, tsv)
	mono := filepath.Join(dir, "mono.txt")
	require.NoError(t, os.WriteFile(mono, []byte(strings.Repeat(strings.Join(enNumbers, " ")+". "+strings.Join(deNumbers, " ")+".\n", 60)), 0o644))
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{
		"bpe_vocab_size": 300, "batch_size": 16, "warmup_steps": 4, "eval_interval": 5, "save_interval": 5,
		"held_out": 20,
		"model": {"d_model": 32, "num_heads": 2, "d_ff": 64, "num_encoder_layers": 1, "num_decoder_layers": 1,
			"dropout": 0.1, "max_len": 24, "activation": "relu", "layer_norm_eps": 1e-5,
			"share_embeddings": true, "tie_output": true, "src_vocab_size": 300, "tgt_vocab_size": 300,
			"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
	}`), 0o644))

	var out, errb bytes.Buffer
	pre := filepath.Join(dir, "pre")
	code := run([]string{"pretrain", "seq2seq", "--config", cfg, "--corpus", mono, "--run", pre, "--max-steps", "6"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "done: 6 steps")

	out.Reset()
	ft := filepath.Join(dir, "ft")
	code = run([]string{"finetune", "seq2seq", "--config", cfg, "--data", tsv, "--run", ft, "--max-steps", "10",
		"--init-from", filepath.Join(pre, "checkpoints", "final")}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	for _, want := range []string{"skipped 1 without a tab, 1 empty", "done: 10 steps", "BLEU", "chrF", "greedy"} {
		require.Contains(t, out.String(), want)
	}
	for _, f := range []string{"results.json", "loss.png", "metrics.jsonl", "checkpoints/final/tokenizer.json", "checkpoints/step-000005/trainer.json"} {
		_, err := os.Stat(filepath.Join(ft, f))
		require.NoError(t, err, f)
	}
	ckpt := filepath.Join(ft, "checkpoints", "final")

	// From a checkpoint, the config's model block may change the dropout
	// rates, which the new checkpoints keep, and nothing else.
	drop := filepath.Join(dir, "dropout.json")
	require.NoError(t, os.WriteFile(drop, []byte(`{"batch_size": 16, "warmup_steps": 4, "held_out": 20, "model": {"dropout": 0.3}}`), 0o644))
	out.Reset()
	code = run([]string{"finetune", "seq2seq", "--config", drop, "--data", tsv, "--run", filepath.Join(dir, "ft-drop"), "--max-steps", "1",
		"--init-from", filepath.Join(pre, "checkpoints", "final")}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "init_from: model.dropout 0.3, the config's, replaces the checkpoint's 0.1\n")
	saved, err := os.ReadFile(filepath.Join(dir, "ft-drop", "checkpoints", "final", "config.json"))
	require.NoError(t, err)
	require.Contains(t, string(saved), `"dropout": 0.3,`)
	require.NoError(t, os.WriteFile(drop, []byte(`{"held_out": 20, "model": {"d_model": 64, "dropout": 0.3}}`), 0o644))
	errb.Reset()
	code = run([]string{"finetune", "seq2seq", "--config", drop, "--data", tsv, "--run", filepath.Join(dir, "ft-wide"),
		"--init-from", filepath.Join(pre, "checkpoints", "final")}, &out, &errb)
	require.Equal(t, 1, code, out.String())
	require.Contains(t, errb.String(), "the config's model block changes model.d_model 64 (the checkpoint's: 32); drop these keys")

	// A separate test set is scored instead of the held-out pairs, with
	// the early stopping asked for; a validation file validates instead of
	// pairs drawn from the data, which all train.
	out.Reset()
	test, valid := filepath.Join(dir, "test.tsv"), filepath.Join(dir, "valid.tsv")
	require.NoError(t, os.WriteFile(test, []byte("seven one\tsieben eins\nnine nine\tneun neun\nsomething new\tetwas neues\n"), 0o644))
	require.NoError(t, os.WriteFile(valid, []byte("two five\tzwei fünf\nsix six\tsechs sechs\n"), 0o644))
	code = run([]string{"finetune", "seq2seq", "--config", cfg, "--data", tsv, "--run", filepath.Join(dir, "ft-test"), "--max-steps", "2",
		"--test-data", test, "--validation-data", valid, "--early-stopping", "never", "--export-ids"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	for _, want := range []string{"early stopping never) on 3 test pairs: BLEU", "greedy on 3 test pairs", "warning: 2 of 3 test sources are also training sources",
		"validation data (held_out is not drawn): read 2 lines: 2 pairs"} {
		require.Contains(t, out.String(), want)
	}
	for f, n := range map[string]int{"test.jsonl": 3, "valid.jsonl": 2} {
		ids, err := os.ReadFile(filepath.Join(dir, "ft-test", "ids", f))
		require.NoError(t, err)
		require.Len(t, strings.Split(strings.TrimSpace(string(ids)), "\n"), n, f)
		require.Regexp(t, `^\{"src":\[\d+(,\d+)*\],"tgt":\[\d+(,\d+)*\]\}\n`, string(ids))
	}
	var counts struct {
		Train int `json:"train_pairs"`
		Held  int `json:"held_out_pairs"`
	}
	js, err := os.ReadFile(filepath.Join(dir, "ft-test", "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &counts))
	require.Equal(t, 2, counts.Held)
	require.Regexp(t, fmt.Sprintf(`read \d+ lines: %d pairs`, counts.Train), out.String(), "every pair of --data trains")

	// Token-level distillation from an ensemble of teachers that share the
	// student's tokenizer (both from the pretrained checkpoint); a teacher
	// with another tokenizer is refused, and so is distillation in
	// pretraining.
	out.Reset()
	distilled := filepath.Join(dir, "ft-distill")
	code = run([]string{"finetune", "seq2seq", "--config", cfg, "--data", tsv, "--run", distilled, "--max-steps", "2",
		"--init-from", filepath.Join(pre, "checkpoints", "final"), "--distill-from", ckpt + "," + ckpt, "--distill-alpha", "0.7", "--distill-top-k", "4"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Regexp(t, `distillation: 2 teacher\(s\) \(.*ft/checkpoints/final,.*\), alpha 0.7, top 4 tokens a position; \d+ training pairs' distributions in`, out.String())
	rec, err := os.ReadFile(filepath.Join(distilled, "run.json"))
	require.NoError(t, err)
	require.Contains(t, string(rec), `alpha 0.7, top 4`)
	errb.Reset()
	code = run([]string{"finetune", "seq2seq", "--config", cfg, "--data", tsv, "--run", filepath.Join(dir, "ft-distill2"), "--max-steps", "2",
		"--init-from", filepath.Join(pre, "checkpoints", "final"), "--distill-from", filepath.Join(dir, "ft-test", "checkpoints", "final")}, &out, &errb)
	require.Equal(t, 1, code, out.String())
	require.Contains(t, errb.String(), "tokenizer differs from the student's: distillation needs the same ids")
	errb.Reset()
	code = run([]string{"finetune", "seq2seq", "--config", cfg, "--data", tsv, "--run", filepath.Join(dir, "ft-distill3"), "--distill-from", ckpt, "--distill-alpha", "0"}, &out, &errb)
	require.Equal(t, 1, code, out.String())
	require.Contains(t, errb.String(), "distill_alpha 0 must be in (0, 1]")
	errb.Reset()
	code = run([]string{"pretrain", "seq2seq", "--config", cfg, "--corpus", mono, "--run", filepath.Join(dir, "pre-distill"), "--max-steps", "1", "--distill-from", ckpt}, &out, &errb)
	require.Equal(t, 2, code, out.String())
	require.Contains(t, errb.String(), "flag provided but not defined: -distill-from")

	// Resuming past the end continues with the checkpoint's tokenizer and
	// model: no tokenizer is trained again.
	out.Reset()
	code = run([]string{"finetune", "seq2seq", "--config", cfg, "--data", tsv, "--run", ft, "--resume", "--max-steps", "12"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "at step 10")
	require.Contains(t, out.String(), "done: 12 steps")

	in := filepath.Join(dir, "in.txt")
	require.NoError(t, os.WriteFile(in, []byte("one two\n\nthree four\n"), 0o644))
	png := filepath.Join(dir, "attention.png")
	out.Reset()
	code = run([]string{"translate", "--checkpoint", ckpt, "--input", in, "--nbest", "2", "--attention", png}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Len(t, lines, 5, "two scored lines per sentence and the blank line kept: %q", out.String())
	require.Equal(t, "", lines[2])
	st, err := os.Stat(png)
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(1000))

	// Spaces around a line do not change its translation: lines are
	// trimmed as the TSV readers trim training and test pairs.
	var outs [2]string
	for i, text := range []string{"three four\n", "  three four \t\n"} {
		f := filepath.Join(dir, fmt.Sprintf("in%d.txt", i))
		require.NoError(t, os.WriteFile(f, []byte(text), 0o644))
		out.Reset()
		require.Equal(t, 0, run([]string{"translate", "--checkpoint", ckpt, "--input", f, "--nbest", "2"}, &out, &errb), errb.String()) // with scores
		outs[i] = out.String()
	}
	require.Equal(t, outs[0], outs[1])

	out.Reset()
	code = run([]string{"eval", "seq2seq", "--checkpoint", ckpt, "--data", tsv, "--limit", "20", "--greedy"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "BLEU")
	// Without the family: config.json's model_type picks it.
	out.Reset()
	code = run([]string{"eval", "--checkpoint", ckpt, "--data", tsv, "--limit", "20", "--greedy"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "greedy on 20 pairs: BLEU")

	// The checkpoint twice is an ensemble of a model with itself: the
	// mean of two equal distributions decodes as the model alone.
	single := out.String()
	out.Reset()
	code = run([]string{"eval", "--checkpoint", ckpt + "," + ckpt, "--data", tsv, "--limit", "20", "--greedy"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Equal(t, single, out.String())
	// An ensemble needs one tokenizer: a copy of the checkpoint whose
	// tokenizer.json differs is refused, and so is an empty list entry or
	// an attention map of several models.
	other := filepath.Join(dir, "other")
	require.NoError(t, os.MkdirAll(other, 0o755))
	files, err := os.ReadDir(ckpt)
	require.NoError(t, err)
	for _, f := range files {
		if f.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(ckpt, f.Name()))
			require.NoError(t, err)
			if f.Name() == "tokenizer.json" {
				b = append(b, ' ')
			}
			require.NoError(t, os.WriteFile(filepath.Join(other, f.Name()), b, 0o644))
		}
	}
	out.Reset()
	require.Equal(t, 0, run([]string{"translate", "--checkpoint", other, "--input", in}, &out, &errb), errb.String())

	// Another system's outputs, one per pair, scored without a model: the
	// references themselves get chrF 100 and every unigram and bigram
	// right (two-word phrases have no 3-grams: BLEU 0, as sacreBLEU
	// unsmoothed), and too few lines are an error.
	refs := filepath.Join(dir, "refs.txt")
	var rb strings.Builder
	for i := 0; i < 20; i++ {
		a, c := i%10, (i/10)%10
		fmt.Fprintf(&rb, "%s %s\n", deNumbers[a], deNumbers[c])
	}
	require.NoError(t, os.WriteFile(refs, []byte(rb.String()), 0o644))
	out.Reset()
	code = run([]string{"eval", "seq2seq", "--data", tsv, "--hypotheses", refs, "--limit", "20"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "on 20 pairs: BLEU 0.00, chrF 100.00\nBLEU = 0.00 100.0/100.0/0.0/0.0 (BP = 1.000")
	errb.Reset()
	require.NotEqual(t, 0, run([]string{"eval", "seq2seq", "--data", tsv, "--hypotheses", refs, "--limit", "21"}, &out, &errb))
	require.Contains(t, errb.String(), "has 20 lines for 21 outputs")

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"translate", "--checkpoint", ckpt, "--input", in, "--beam", "0"}, "beam size 0"},
		{[]string{"translate", "--checkpoint", filepath.Join(dir, "nowhere")}, "no such file"},
		{[]string{"translate", "--checkpoint", ckpt + "," + other, "--input", in}, "an ensemble's models must share one tokenizer"},
		{[]string{"translate", "--checkpoint", ckpt + ",", "--input", in}, "checkpoint 2 of the list is empty"},
		{[]string{"translate", "--checkpoint", ckpt + "," + ckpt, "--input", in, "--attention", png}, "draws one model's attention"},
		{[]string{"eval", "--checkpoint", ckpt + "," + filepath.Join(dir, "nowhere"), "--data", tsv}, "no such file"},
		{[]string{"finetune", "seq2seq", "--config", cfg, "--run", ft}, "no data"},
		{[]string{"finetune", "seq2seq", "--config", cfg, "--data", tsv, "--run", filepath.Join(dir, "bad"), "--early-stopping", "soon"}, "true, false or never"},
		{[]string{"translate", "--checkpoint", ckpt, "--input", in, "--early-stopping", "soon"}, "true, false or never"},
		{[]string{"eval", "--checkpoint", ckpt, "--data", tsv, "--metric", "wer"}, `metric "wer" must be "bleu" or "g2p"`},
		{[]string{"finetune", "seq2seq", "--config", cfg, "--data", tsv, "--run", filepath.Join(dir, "bad2"), "--metric", "wer"}, `metric "wer" must be "bleu" or "g2p"`},
	} {
		errb.Reset()
		require.NotEqual(t, 0, run(c.args, &out, &errb), c.args)
		require.Contains(t, errb.String(), c.msg, c.args)
	}

	// A GPT checkpoint is not a seq2seq one.
	gptDir := filepath.Join(dir, "gpt")
	require.NoError(t, os.MkdirAll(gptDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gptDir, "config.json"), []byte(`{"model_type": "gpt2", "n_embd": 32}`), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"translate", "--checkpoint", gptDir, "--input", in}, &out, &errb))
	require.Contains(t, errb.String(), "another model family")
}

// Grapheme-to-phoneme through the CLI on generated data: letters
// (space-separated) to phoneme-like symbols, a word-level vocabulary, and
// word and phoneme error rates over every pronunciation of a word. Each
// letter has one symbol, and words ending in "e" have a second
// pronunciation without the last symbol, so the task is learnable in a
// few hundred steps; an untrained model gets every word wrong.
func TestSeq2SeqG2PCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for a few hundred steps")
	}
	dir := t.TempDir()
	letters := []string{"a", "b", "c", "d", "e", "f"}
	phones := []string{"AA", "B", "K", "D", "IY", "F"}
	var train, test strings.Builder
	r := uint64(1)
	for i := 0; i < 700; i++ {
		var w, p []string
		for n := 3 + i%3; len(w) < n; {
			r = r*6364136223846793005 + 1442695040888963407
			k := int(r>>33) % len(letters)
			w, p = append(w, letters[k]), append(p, phones[k])
		}
		b := &train
		if i >= 600 {
			b = &test
		}
		fmt.Fprintf(b, "%s\t%s\n", strings.Join(w, " "), strings.Join(p, " "))
		if w[len(w)-1] == "e" {
			fmt.Fprintf(b, "%s\t%s\n", strings.Join(w, " "), strings.Join(p[:len(p)-1], " "))
		}
	}
	trainTSV, testTSV := filepath.Join(dir, "train.tsv"), filepath.Join(dir, "test.tsv")
	require.NoError(t, os.WriteFile(trainTSV, []byte(train.String()), 0o644))
	require.NoError(t, os.WriteFile(testTSV, []byte(test.String()), 0o644))
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{
		"tokenizer_model": "wordlevel", "metric": "g2p", "batch_size": 32, "warmup_steps": 50, "lr_factor": 1,
		"eval_interval": 100, "save_interval": 300, "held_out": 30, "num_beams": 2,
		"predict_with_generate": true, "metric_for_best_model": "wer", "load_best_model_at_end": true,
		"model": {"model_type": "marian", "d_model": 32, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
			"encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "encoder_layers": 1, "decoder_layers": 1,
			"dropout": 0, "attention_dropout": 0, "max_position_embeddings": 12, "vocab_size": 20,
			"share_encoder_decoder_embeddings": true, "tie_word_embeddings": true, "activation_function": "relu",
			"pad_token_id": 0, "decoder_start_token_id": 1, "eos_token_id": 2}
	}`), 0o644))
	var out, errb bytes.Buffer
	run1 := filepath.Join(dir, "g2p")
	code := run([]string{"finetune", "seq2seq", "--config", cfg, "--data", trainTSV, "--test-data", testTSV, "--run", run1, "--max-steps", "500"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "word-level vocabulary: 17 tokens") // 5 specials, 6 letters, 6 symbols
	res, err := os.ReadFile(filepath.Join(run1, "results.json"))
	require.NoError(t, err)
	var got struct {
		Scores []struct {
			Strategy string
			WER, PER float64
		}
		Best     string `json:"best_checkpoint"`
		BestStep int    `json:"best_step"`
	}
	require.NoError(t, json.Unmarshal(res, &got))
	bestDir := filepath.Join(run1, "checkpoints", "best")
	require.Equal(t, bestDir, got.Best, "load_best_model_at_end: the scores are of the best checkpoint")
	require.Contains(t, out.String(), "load_best_model_at_end: the model now holds "+bestDir)
	require.Len(t, got.Scores, 2)
	for _, s := range got.Scores {
		require.Less(t, s.WER, 20.0, "%s: %s", s.Strategy, out.String())
		require.Less(t, s.PER, 5.0, "%s", s.Strategy)
	}
	require.Regexp(t, `greedy on \d+ test words: WER`, out.String())
	// predict_with_generate: every evaluation decodes the held-out words
	// with the weights of that step, and the best checkpoint is the one of
	// the lowest WER among them.
	require.Regexp(t, `step 500/500  loss \S+  val \S+ \[per \S+ wer \S+\]`, out.String())
	recs, err := os.ReadFile(filepath.Join(run1, "metrics.jsonl"))
	require.NoError(t, err)
	var wers []float64
	for _, line := range strings.Split(strings.TrimSpace(string(recs)), "\n") {
		var rec struct {
			Step      int
			ValScores map[string]float64 `json:"val_scores"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Step%100 == 0 {
			require.Contains(t, rec.ValScores, "per", "step %d", rec.Step)
			wers = append(wers, rec.ValScores["wer"])
		} else {
			require.Nil(t, rec.ValScores)
		}
	}
	t.Logf("held-out WER per evaluation: %v", wers)
	require.Len(t, wers, 5)
	require.Greater(t, wers[0], wers[4]+20, "the held-out WER falls as the model learns: %v", wers)
	var best struct {
		BestScore float64 `json:"best_score"`
	}
	st, err := os.ReadFile(filepath.Join(run1, "checkpoints", "best", "trainer.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(st, &best))
	require.Equal(t, slices.Min(wers), best.BestScore)
	require.Equal(t, 100*(1+slices.Index(wers, slices.Min(wers))), got.BestStep)
	// zoo eval scores a checkpoint, or a file of outputs (one per word), by
	// the same error rates: the best checkpoint's are the run's final
	// scores (load_best_model_at_end).
	out.Reset()
	code = run([]string{"eval", "--checkpoint", bestDir, "--data", testTSV, "--metric", "g2p", "--greedy"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Regexp(t, fmt.Sprintf(`greedy on \d+ words: WER %.2f%%, PER %.2f%%`, got.Scores[1].WER, got.Scores[1].PER), out.String())
	var first strings.Builder
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(test.String()), "\n") {
		src, tgt, _ := strings.Cut(line, "\t")
		if !seen[src] {
			seen[src] = true
			first.WriteString(tgt + "\n")
		}
	}
	hyps := filepath.Join(dir, "hyps.txt")
	require.NoError(t, os.WriteFile(hyps, []byte(first.String()), 0o644))
	out.Reset()
	code = run([]string{"eval", "seq2seq", "--data", testTSV, "--hypotheses", hyps, "--metric", "g2p"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), fmt.Sprintf("on %d words: WER 0.00%%, PER 0.00%%", len(seen)))

	// Letters the word-level vocabulary lacks are noted, never silent:
	// zoo translate on stderr, zoo eval beside its scores.
	odd := write(t, filepath.Join(dir, "odd.txt"), "a z b\nq q\n")
	code, stderr := runLimited(t, 2048, "translate", "--checkpoint", bestDir, "--input", odd)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "3 words of the input are not in the tokenizer's vocabulary and were mapped to")
	out.Reset()
	code = run([]string{"eval", "--checkpoint", bestDir, "--data", write(t, filepath.Join(dir, "odd.tsv"), "a z b\tAA B\n"), "--metric", "g2p", "--greedy"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "1 word of the sources is not in the tokenizer's vocabulary and was mapped to")
	// and so is the fine-tuning pipeline, on the checkpoint's tokenizer.
	out.Reset()
	oddTrain := write(t, filepath.Join(dir, "odd-train.tsv"), train.String()+strings.Repeat("a z\tAA B\n", 5))
	ftCfg := write(t, filepath.Join(dir, "ft.json"), `{"held_out": 30, "batch_size": 8, "metric": "g2p"}`)
	code = run([]string{"finetune", "seq2seq", "--config", ftCfg, "--init-from", bestDir, "--data", oddTrain, "--run", filepath.Join(dir, "ft"), "--max-steps", "1",
		"--length-penalty-style", "hf"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Regexp(t, `note: \d+ words of the training pairs are not in the tokenizer's vocabulary`, out.String())
	// The final scores rank beams by the length penalty named.
	require.Contains(t, out.String(), "beam 4 (Hugging Face's length penalty α 0.6")
	errb.Reset()
	code = run([]string{"finetune", "seq2seq", "--config", ftCfg, "--init-from", bestDir, "--data", oddTrain, "--run", filepath.Join(dir, "ft2"), "--max-steps", "1",
		"--length-penalty-style", "fairseq"}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), `length_penalty_style: decode: length penalty style "fairseq"`)

	tok, err := os.ReadFile(filepath.Join(run1, "checkpoints", "final", "tokenizer.json"))
	require.NoError(t, err)
	require.Contains(t, string(tok), `"type": "WordLevel"`)
}
