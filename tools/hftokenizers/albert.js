// albert.js builds an ALBERT-layout tokenizer.json (albert-base-v2's:
// SentencePiece's Unigram as transformers converts it) from a Unigram
// trained by Hugging Face's tokenizers (the npm package "tokenizers", its
// own UnigramTrainer, with ALBERT's normalizer and pre-tokenizer) on a
// text, and writes what datasets' TestAlbertUnigramMatchesHuggingFace
// checks:
//
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/albert.js \
//     $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt datasets/testdata [reuse]
//
// With "reuse" it reads the albert_unigram.json there instead of training
// anew (the trainer's scores vary in their last bits between runs).
// writes datasets/testdata/albert_unigram.json (the tokenizer) and
// datasets/testdata/albert_unigram_hf.json (tokenizers' ids, with and
// without the template's [CLS] and [SEP], of single texts and pairs, the
// decodes, and the digest of Opticks' ids).
//
// The layout is albert-base-v2's tokenizer.json: <pad> <unk> [CLS] [SEP]
// [MASK] (ids 0-4, added tokens, special; unk_id 1), then every trained
// piece of one character and the best-scored others, PIECES in all, in
// the trainer's order; the normalizer Sequence [Replace `` → ", Replace
// '' → ", NFKD, StripAccents, Lowercase], the pre-tokenizer Sequence
// [WhitespaceSplit, Metaspace ▁ always, split], the post-processor
// TemplateProcessing [CLS]:0 $A:0 [SEP]:0 and [CLS]:0 $A:0 [SEP]:0 $B:1
// [SEP]:1, and the decoder Metaspace. The file is loaded back with
// Tokenizer.fromString, so every id written is tokenizers' own.
"use strict";
const fs = require("fs");
const crypto = require("crypto");
const path = require("path");
const os = require("os");
const tk = require("tokenizers");

const PIECES = 3000;

function sha256(ids) {
  return crypto.createHash("sha256").update(ids.join(",")).digest("hex");
}

async function main() {
  const [textPath, outDir, reuse] = process.argv.slice(2);
  const text = fs.readFileSync(textPath, "utf8");

  const normalizer = {
    type: "Sequence",
    normalizers: [
      { type: "Replace", pattern: { String: "``" }, content: '"' },
      { type: "Replace", pattern: { String: "''" }, content: '"' },
      { type: "NFKD" },
      { type: "StripAccents" },
      { type: "Lowercase" },
    ],
  };
  const preTokenizer = {
    type: "Sequence",
    pretokenizers: [{ type: "WhitespaceSplit" }, { type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true }],
  };
  let json;
  if (reuse === "reuse") {
    json = fs.readFileSync(path.join(outDir, "albert_unigram.json"), "utf8");
  } else {
    json = train(textPath, normalizer, preTokenizer);
  }
  fs.writeFileSync(path.join(outDir, "albert_unigram.json"), json);
  const tok = tk.Tokenizer.fromString(json);
  const vocab = JSON.parse(json).model.vocab;
  await record(tok, vocab, text, outDir);
}

// train trains the Unigram with ALBERT's normalizer and pre-tokenizer and
// returns its tokenizer.json in albert-base-v2's layout.
function train(textPath, normalizer, preTokenizer) {
  const trainer = new tk.Tokenizer(tk.Unigram.empty());
  trainer.setNormalizer(
    tk.sequenceNormalizer([tk.replace("``", '"'), tk.replace("''", '"'), tk.nfkdNormalizer(), tk.stripAccentsNormalizer(), tk.lowercase()]),
  );
  trainer.setPreTokenizer(tk.sequencePreTokenizer([tk.whitespaceSplitPreTokenizer(), tk.metaspacePreTokenizer("▁", "always", true)]));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "albert-"));
  trainer.train([textPath]);
  trainer.save(path.join(tmp, "trained.json"));
  const trained = JSON.parse(fs.readFileSync(path.join(tmp, "trained.json"), "utf8"));

  const specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"];
  const vocab = specials.map((s) => [s, 0]);
  const singles = trained.model.vocab.filter(([p]) => [...p].length === 1).length;
  let others = PIECES - singles;
  for (const [p, s] of trained.model.vocab) {
    if (specials.includes(p)) continue;
    if ([...p].length === 1 || others-- > 0) vocab.push([p, s]);
  }
  const added = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const file = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specials.map((s, i) => added(i, s)),
    normalizer,
    pre_tokenizer: preTokenizer,
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "[SEP]", type_id: 0 } }],
      pair: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
        { Sequence: { id: "B", type_id: 1 } },
        { SpecialToken: { id: "[SEP]", type_id: 1 } },
      ],
      special_tokens: {
        "[CLS]": { id: "[CLS]", ids: [2], tokens: ["[CLS]"] },
        "[SEP]": { id: "[SEP]", ids: [3], tokens: ["[SEP]"] },
      },
    },
    decoder: { type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true },
    model: { type: "Unigram", unk_id: 1, vocab, byte_fallback: false },
  };
  return JSON.stringify(file) + "\n";
}

// record writes tokenizers' ids, type ids, offsets (in characters) and
// decodes.
async function record(tok, vocab, text, outDir) {

  const texts = [
    "",
    " ",
    "Hello world",
    "  two leading spaces, two trailing  ",
    "tabs\tand\t\tnewlines\n\nend\n",
    "``Quoted'' text, 'single' and \"double\"",
    "UPPER lower MiXeD İstanbul ΣΊΣΥΦΟΣ",
    "accents: café naïve Ångström, combining e\u0301 and ﬁ ligature ① ½",
    "marks of every kind: क़ि हिंदी (Mc and Mn), a\u20dd (Me)",
    "emoji 😀🎉 👍🏽 and CJK 日本語のテキスト 中文 한국어",
    "[CLS] written out [SEP] and [MASK] and <unk> <pad>",
    "▁already▁metaspace ▁ ▁▁",
    "xyzzy qqqq ZZZZ 0000 ~~~~ ||||",
  ];
  const pairs = [
    ["Is light a wave?", "Newton thought it was made of corpuscles."],
    ["", "only the second"],
    ["The ``prism'' splits white light.", "Into its Colours, as Sir Isaac shewed."],
  ];
  const out = { tokenizers: require("tokenizers/package.json").version, node: process.version, pieces: vocab.length, texts: [], pairs: [], decodes: [] };
  for (const t of texts) {
    const plain = await tok.encode(t, null, { addSpecialTokens: false });
    const ids = plain.getIds();
    const enc = await tok.encode(t, null, { addSpecialTokens: true });
    out.texts.push({ text: t, ids, offsets: plain.getOffsets(), ids_special: enc.getIds(), type_ids: enc.getTypeIds(), decoded: await tok.decode(ids, false) });
  }
  for (const [a, b] of pairs) {
    const enc = await tok.encode(a, b, { addSpecialTokens: true });
    out.pairs.push({ a, b, ids: enc.getIds(), type_ids: enc.getTypeIds() });
  }
  let seed = 11;
  const r = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  for (let i = 0; i < 100; i++) {
    const ids = [];
    for (let j = 1 + Math.floor(r() * 10); j > 0; j--) ids.push(Math.floor(r() * vocab.length));
    out.decodes.push({ ids, text: await tok.decode(ids, false) });
  }
  const t0 = Date.now();
  const all = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
  const ms = Date.now() - t0;
  out.opticks = { bytes: Buffer.byteLength(text), ids: all.length, sha256: sha256(all), head: all.slice(0, 50), encode_ms: ms };
  fs.writeFileSync(path.join(outDir, "albert_unigram_hf.json"), JSON.stringify(out) + "\n");
  console.error(`ALBERT layout: ${vocab.length} pieces; Opticks ${all.length} ids in ${ms} ms, sha256 ${out.opticks.sha256}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
