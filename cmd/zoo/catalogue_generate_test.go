package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// withJSON copies the checkpoint from into dir/c and sets keys of its file
// (config.json or a new generation_config.json).
func withJSON(t *testing.T, from, dir, file string, keys map[string]any) string {
	t.Helper()
	c := copyDir(t, from, filepath.Join(dir, "c"))
	m := map[string]any{}
	if b, err := os.ReadFile(filepath.Join(c, file)); err == nil {
		require.NoError(t, json.Unmarshal(b, &m))
	}
	for k, v := range keys {
		m[k] = v
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	write(t, filepath.Join(c, file), string(b))
	return c
}

// generationCases are the bad inputs of issue 34's generation items:
// huge token limits, and a checkpoint's generation settings that the zoo
// does not implement, refused by name instead of ignored.
func generationCases() []badInput {
	return []badInput{
		{"generate a billion tokens", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.gptCkpt, "--max-new-tokens", "1000000000"}
		}, 1, "max_new_tokens 1000000000 is more than 1048576"},
		{"generate 4e18 tokens by beam search", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.gptCkpt, "--beam", "2", "--max-new-tokens", "4000000000000000000"}
		}, 1, "MaxNewTokensLimit"},
		{"generate with encoder_repetition_penalty in config.json", func(t *testing.T, f fixture, d string) []string {
			c := withJSON(t, f.gptCkpt, d, "config.json", map[string]any{"encoder_repetition_penalty": 1.3})
			require.NoError(t, os.Remove(filepath.Join(c, "generation_config.json"))) // else config.json's is not read
			return []string{"generate", "--checkpoint", c, "--max-new-tokens", "2"}
		}, 1, "encoder_repetition_penalty 1.3 is not supported"},
		{"generate with encoder_repetition_penalty in generation_config.json", func(t *testing.T, f fixture, d string) []string {
			c := withJSON(t, f.gptCkpt, d, "generation_config.json", map[string]any{"encoder_repetition_penalty": 1.3})
			return []string{"generate", "--checkpoint", c, "--max-new-tokens", "2"}
		}, 1, "generation_config.json: encoder_repetition_penalty 1.3 is not supported"},
		{"generate with repetition_penalty 0 in generation_config.json", func(t *testing.T, f fixture, d string) []string {
			c := withJSON(t, f.gptCkpt, d, "generation_config.json", map[string]any{"repetition_penalty": 0})
			return []string{"generate", "--checkpoint", c, "--max-new-tokens", "2"}
		}, 1, "generation_config.json: repetition_penalty 0: want a number > 0"},
		{"generate with --repetition-penalty -1", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"generate", "--checkpoint", f.gptCkpt, "--repetition-penalty", "-1", "--max-new-tokens", "2"}
		}, 2, "--repetition-penalty -1"},
		{"generate past config.json's max_length", func(t *testing.T, f fixture, d string) []string {
			c := withJSON(t, f.gptCkpt, d, "config.json", map[string]any{"max_length": 3})
			require.NoError(t, os.Remove(filepath.Join(c, "generation_config.json"))) // else config.json's is not read
			return []string{"generate", "--checkpoint", c, "--prompt", "the quick"}
		}, 1, "max_length 3 leaves no room after the prompt's"},
		{"translate with min_length in generation_config.json", func(t *testing.T, f fixture, d string) []string {
			c := withJSON(t, f.s2sCkpt, d, "generation_config.json", map[string]any{"min_length": 4})
			return []string{"translate", "--checkpoint", c, "--input", write(t, filepath.Join(d, "in.txt"), "the fox\n")}
		}, 1, "min_length 4 is not supported"},
		{"translate with do_sample", func(t *testing.T, f fixture, d string) []string {
			c := withJSON(t, f.s2sCkpt, d, "config.json", map[string]any{"do_sample": true})
			require.NoError(t, os.Remove(filepath.Join(c, "generation_config.json"))) // else config.json's is not read
			return []string{"translate", "--checkpoint", c, "--input", write(t, filepath.Join(d, "in.txt"), "the fox\n")}
		}, 1, "do_sample true is not supported"},
		{"translate with an unknown length penalty style", func(t *testing.T, f fixture, d string) []string {
			return []string{"translate", "--checkpoint", f.s2sCkpt, "--length-penalty-style", "fairseq", "--input", write(t, filepath.Join(d, "in.txt"), "the fox\n")}
		}, 2, "--length-penalty-style"},
		{"eval with an unknown length penalty style", func(_ *testing.T, f fixture, _ string) []string {
			return []string{"eval", "--checkpoint", f.s2sCkpt, "--data", f.tsv, "--length-penalty-style", "x"}
		}, 2, "--length-penalty-style"},
	}
}

// TestGenerationCatalogue runs generationCases as TestBadInputCatalogue
// runs the catalogue, each in a child process limited to 2 GB of address
// space: a limit that once reserved every requested token dies there,
// visibly, instead of taking the machine.
func TestGenerationCatalogue(t *testing.T) {
	if _, err := exec.LookPath("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for ulimit")
	}
	f := newFixture(t)
	before := digest(t, f.dir)
	runLimitedCases(t, f, generationCases())
	require.Equal(t, before, digest(t, f.dir))
}

// The checkpoint's generation settings are the defaults of the flags not
// given: a generation_config.json with num_beams 3 and num_return_sequences
// 2 prints two scored translations per line, and flags still win; GPT's
// do_sample false in config.json makes zoo generate greedy (equal outputs
// for any seed), and task_specific_params is noted, not applied.
func TestGenerationDefaultsFromCheckpoint(t *testing.T) {
	f := newFixture(t)
	d := t.TempDir()
	in := write(t, filepath.Join(d, "in.txt"), "the fox\nthe dog\n")
	c := withJSON(t, f.s2sCkpt, d, "generation_config.json", map[string]any{"num_beams": 3, "num_return_sequences": 2, "length_penalty": 1.0})
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"translate", "--checkpoint", c, "--input", in}, &out, &errb), errb.String())
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 4, "two scored candidates per line:\n%s", out.String())
	for _, l := range lines {
		require.Regexp(t, `^-?[0-9]+\.[0-9]{4}\t`, l)
	}
	out.Reset()
	require.Equal(t, 0, run([]string{"translate", "--checkpoint", c, "--input", in, "--nbest", "1"}, &out, &errb), errb.String())
	require.Len(t, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), 2, "--nbest wins over num_return_sequences")

	g := withJSON(t, f.gptCkpt, filepath.Join(d, "gpt"), "config.json", map[string]any{"do_sample": false,
		"task_specific_params": map[string]any{"text-generation": map[string]any{"do_sample": true, "max_length": 50}}})
	require.NoError(t, os.Remove(filepath.Join(g, "generation_config.json"))) // else config.json's is not read
	var outs []string
	for _, seed := range []string{"1", "2"} {
		code, stderr := runLimited(t, 2048, "generate", "--checkpoint", g, "--max-new-tokens", "8", "--seed", seed)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stderr, "task_specific_params")
		out.Reset()
		require.Equal(t, 0, run([]string{"generate", "--checkpoint", g, "--max-new-tokens", "8", "--seed", seed}, &out, &errb))
		outs = append(outs, out.String())
	}
	require.Equal(t, outs[0], outs[1], "do_sample false: greedy, whatever the seed")
}
