// llama.js trains a Llama-2-style tokenizer (a byte-fallback BPE over
// the whole text, SentencePiece's "▁" for spaces) with Hugging Face's
// tokenizers (the npm package "tokenizers", its own BpeTrainer) on a
// text, and writes what datasets' TestLlamaBPEMatchesHuggingFace checks:
//
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/llama.js \
//     $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt datasets/testdata
//
// writes datasets/testdata/llama_bpe.json (the tokenizer) and
// datasets/testdata/llama_bpe_hf.json (tokenizers' ids and decodes).
//
// The trainer cannot be configured from node (Tokenizer.train uses the
// model's default BpeTrainer: 30,000 tokens, no special tokens), so the
// script then edits the file as Hugging Face's Llama conversion lays it
// out: <unk> <s> </s> (ids 0-2, added tokens, special), the 256 byte
// tokens <0x00> … <0xFF> (ids 3-258), then the trained alphabet and the
// tokens of the first MERGES merges in their order (a BPE trained to a
// smaller size has exactly those merges: training is greedy). The edited
// file is loaded back with Tokenizer.fromString, so every id written is
// tokenizers' own.
//
// Four layouts share the model (the "variants"): Llama 2's (normalizer
// Prepend("▁") and Replace(" ", "▁"), no pre-tokenizer, decoder Replace,
// ByteFallback, Fuse, Strip), the newer conversion's (Metaspace with
// prepend_scheme "first" and split false, decoder Metaspace,
// ByteFallback, Fuse), and a third (NFKC, Metaspace "always" with
// split, decoder Sequence of Metaspace and ByteFallback, no Fuse: tokens
// joined as they are); and a fourth, not Llama's, with NFC in front of
// GPT-2's ByteLevel pre-tokenizer and decoder.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const os = require("os");
const tk = require("tokenizers");

const MERGES = 2000;

function sha256(ids) {
  return crypto.createHash("sha256").update(ids.join(",")).digest("hex");
}

// rng is a small deterministic generator (mulberry32).
function rng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomText(seed, n) {
  const r = rng(seed);
  const pools = [
    " \t\n  ",
    "abcdefghijklmnopqrstuvwxyz",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:'\"()-",
    "日本語中文字漢",
    "éèàçñöüß",
    "😀🎉👍🏽🇫🇷",
    "\u0301\u0308ﬁ①Å",
    "<s></s><unk>▁",
  ];
  let s = "";
  while ([...s].length < n) {
    const p = [...pools[Math.floor(r() * pools.length)]];
    s += p[Math.floor(r() * p.length)];
  }
  return s;
}

async function main() {
  const [textPath, outDir] = process.argv.slice(2);
  const text = fs.readFileSync(textPath, "utf8");

  // Train: Llama 2's normalizer, a byte-fallback BPE.
  const trainer = new tk.Tokenizer(tk.BPE.init({}, [], { byteFallback: true }));
  trainer.setNormalizer(tk.sequenceNormalizer([tk.prependNormalizer("▁"), tk.replace(" ", "▁")]));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "llama-"));
  trainer.train([textPath]);
  trainer.save(path.join(tmp, "trained.json"));
  const trained = JSON.parse(fs.readFileSync(path.join(tmp, "trained.json"), "utf8"));

  // Cut to MERGES merges and lay the vocabulary out as Llama's.
  const oldVocab = trained.model.vocab;
  const merges = trained.model.merges.slice(0, MERGES).map((m) => (Array.isArray(m) ? m : m.split(" ")));
  const keep = new Set();
  const mergedTokens = new Set(trained.model.merges.map((m) => (Array.isArray(m) ? m.join("") : m.split(" ").join(""))));
  for (const tok of Object.keys(oldVocab)) if (!mergedTokens.has(tok)) keep.add(tok); // the alphabet
  for (const [a, b] of merges) keep.add(a + b);
  const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`] = 3 + b;
  let next = 259;
  for (const [tok] of Object.entries(oldVocab).sort((x, y) => x[1] - y[1])) {
    if (keep.has(tok) && !(tok in vocab)) vocab[tok] = next++;
  }
  const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const file = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
    normalizer: {
      type: "Sequence",
      normalizers: [
        { type: "Prepend", prepend: "▁" },
        { type: "Replace", pattern: { String: " " }, content: "▁" },
      ],
    },
    pre_tokenizer: null,
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
      pair: [
        { SpecialToken: { id: "<s>", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "<s>", type_id: 1 } },
        { Sequence: { id: "B", type_id: 1 } },
      ],
      special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
    },
    decoder: {
      type: "Sequence",
      decoders: [
        { type: "Replace", pattern: { String: "▁" }, content: " " },
        { type: "ByteFallback" },
        { type: "Fuse" },
        { type: "Strip", content: " ", start: 1, stop: 0 },
      ],
    },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: "<unk>",
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const base = JSON.stringify(file, null, 2) + "\n";
  fs.writeFileSync(path.join(outDir, "llama_bpe.json"), base);

  const variants = [
    { name: "llama2 (Prepend, Replace)", patch: {} },
    {
      name: "Metaspace first, no split",
      patch: {
        normalizer: null,
        pre_tokenizer: { type: "Metaspace", replacement: "▁", prepend_scheme: "first", split: false },
        decoder: {
          type: "Sequence",
          decoders: [{ type: "Metaspace", replacement: "▁", prepend_scheme: "first", split: false }, { type: "ByteFallback" }, { type: "Fuse" }],
        },
      },
    },
    {
      name: "NFKC, Metaspace always, split",
      patch: {
        normalizer: { type: "NFKC" },
        pre_tokenizer: { type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true },
        decoder: {
          type: "Sequence",
          decoders: [{ type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true }, { type: "ByteFallback" }],
        },
      },
    },
    {
      // Not a Llama layout: a normalizer in front of GPT-2's ByteLevel
      // pre-tokenizer, which also runs natively now. The vocabulary has
      // few byte-level symbols ("Ġ" is not one): byte fallback covers them.
      name: "NFC, ByteLevel",
      patch: {
        normalizer: { type: "NFC" },
        pre_tokenizer: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
        decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
      },
    },
  ];
  const texts = [
    "",
    " ",
    "Hello world",
    "  two leading spaces, two trailing  ",
    "tabs\tand\t\tnewlines\n\nend\n",
    "emoji 😀🎉 👍🏽 and flags 🇫🇷",
    "日本語のテキスト 中文 한국어",
    "accents: café naïve Ångström, combining e\u0301 and ﬁ ligature ①",
    "<s>starts with bos</s> and <s> inside<unk>",
    "no spaces: " + text.slice(0, 2000).replace(/\s+/g, ""),
    "▁already▁metaspace ▁",
    randomText(1, 1000),
    randomText(2, 1000),
  ];
  const r = rng(7);
  const size = Object.keys(vocab).length;
  const decodes = [];
  for (let i = 0; i < 200; i++) {
    const n = 1 + Math.floor(r() * 12);
    const ids = [];
    for (let j = 0; j < n; j++) {
      // Favour the byte tokens and the specials: invalid UTF-8 runs.
      ids.push(r() < 0.5 ? Math.floor(r() * 259) : Math.floor(r() * size));
    }
    decodes.push(ids);
  }
  decodes.push([3 + 0xe6, 3 + 0x97, 3 + 0xa5], [3 + 0xe6, 3 + 0x97], [3 + 0xff, 3 + 0x41], [1, 3 + 0xf0, 3 + 0x9f, 3 + 0x98, 3 + 0x80, 2]);

  const out = { tokenizers: require("tokenizers/package.json").version, node: process.version, merges: MERGES, vocab: size, variants: [] };
  for (const v of variants) {
    const json = Object.assign(JSON.parse(base), v.patch);
    const tok = tk.Tokenizer.fromString(JSON.stringify(json));
    const res = { name: v.name, patch: v.patch, texts: [], decodes: [] };
    for (const t of texts) {
      const plain = await tok.encode(t, null, { addSpecialTokens: false });
      const withSpecials = await tok.encode(t, null, { addSpecialTokens: true });
      const ids = plain.getIds();
      res.texts.push({ text: t, ids, ids_special: withSpecials.getIds(), decoded: await tok.decode(ids, false) });
    }
    const pair = await tok.encode("first text", "second text", { addSpecialTokens: true });
    res.pair = { a: "first text", b: "second text", ids: pair.getIds(), type_ids: pair.getTypeIds() };
    const t0 = Date.now();
    const all = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const ms = Date.now() - t0;
    const back = await tok.decode(all, false);
    res.opticks = { bytes: Buffer.byteLength(text), ids: all.length, sha256: sha256(all), head: all.slice(0, 50), round_trip: back === text, encode_ms: ms };
    for (const ids of decodes) res.decodes.push({ ids, text: await tok.decode(ids, false) });
    out.variants.push(res);
    console.error(`${v.name}: Opticks ${all.length} ids in ${ms} ms, round trip ${back === text}`);
  }
  // Added tokens with normalized (matched by their normalized content)
  // and lstrip/rstrip, on the Llama 2 layout.
  {
    const json = JSON.parse(base);
    const added = (id, content, o) => Object.assign({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false }, o);
    json.added_tokens.push(added(size, "hi", { normalized: true }), added(size + 1, "[X]", { lstrip: true, rstrip: true }));
    const tok = tk.Tokenizer.fromString(JSON.stringify(json));
    out.added = { tokens: json.added_tokens.slice(3), texts: [], decodes: [] };
    for (const t of ["hi there hi", "ahi", "a  [X]  b", "hi", " hi", "say hi", "[X]hi"]) {
      out.added.texts.push({ text: t, ids: (await tok.encode(t, null, { addSpecialTokens: false })).getIds() });
    }
    for (const ids of [[size], [349, size, size + 1]]) out.added.decodes.push({ ids, text: await tok.decode(ids, false) });
  }
  fs.writeFileSync(path.join(outDir, "llama_bpe_hf.json"), JSON.stringify(out) + "\n");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
