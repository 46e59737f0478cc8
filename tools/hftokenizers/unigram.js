// unigram.js trains a Unigram tokenizer (SentencePiece's unigram language
// model, "▁" for spaces) with Hugging Face's tokenizers (the npm package
// "tokenizers", its own UnigramTrainer) on a text, and writes what
// datasets' TestUnigramMatchesHuggingFace checks:
//
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/unigram.js \
//     $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt datasets/testdata
//
// writes datasets/testdata/unigram.json (the tokenizer) and
// datasets/testdata/unigram_hf.json (tokenizers' ids and decodes).
//
// The trainer cannot be configured from node (Tokenizer.train uses the
// model's default UnigramTrainer: 8000 pieces asked, no unknown piece),
// so the script then lays the file out as a SentencePiece conversion
// does: <unk> <s> </s> (ids 0-2, score 0, added tokens, special), the 256
// byte pieces <0x00> … <0xFF> (ids 3-258, score 0), then every trained
// piece of one character and the best-scored others, PIECES in all, in
// the trainer's order (by score). The edited file is loaded back with
// Tokenizer.fromString, so every id written is tokenizers' own.
//
// Five layouts share the model (the "variants"): T5's (unk_id 0, no byte
// fallback, Metaspace "always" with split, decoder Metaspace); a
// byte-fallback one (NFKC, Metaspace "first" without split, so a whole
// text is one word of the lattice, decoder Replace, ByteFallback, Fuse,
// Strip, template <s>); one with the Whitespace pre-tokenizer (words and
// punctuation without "▁", tokens joined by spaces on decode); and one
// with Prepend and Replace normalizers, no pre-tokenizer, byte fallback
// and the pieces of one character other than "▁" and letters removed, so
// the unknown piece is fused over runs (fuse_unk) and then falls back to
// bytes; and GPT-2's ByteLevel pre-tokenizer and decoder (the model sees
// byte-level symbols, which are mostly unknown pieces).
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
    "<s></s><unk>▁<0x41>",
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

  const trainer = new tk.Tokenizer(tk.Unigram.empty());
  trainer.setPreTokenizer(tk.metaspacePreTokenizer("▁", "always", true));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "unigram-"));
  trainer.train([textPath]);
  trainer.save(path.join(tmp, "trained.json"));
  const trained = JSON.parse(fs.readFileSync(path.join(tmp, "trained.json"), "utf8"));

  const hex = (b) => `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`;
  const vocab = [["<unk>", 0], ["<s>", 0], ["</s>", 0]];
  for (let b = 0; b < 256; b++) vocab.push([hex(b), 0]);
  const singles = trained.model.vocab.filter(([p]) => [...p].length === 1).length;
  let others = PIECES - singles;
  for (const [p, s] of trained.model.vocab) {
    if ([...p].length === 1 || others-- > 0) vocab.push([p, s]);
  }
  const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const file = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
    normalizer: null,
    pre_tokenizer: { type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true },
    post_processor: null,
    decoder: { type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true },
    model: { type: "Unigram", unk_id: 0, vocab, byte_fallback: false },
  };
  const base = JSON.stringify(file) + "\n";
  fs.writeFileSync(path.join(outDir, "unigram.json"), base);

  const llamaDecoder = {
    type: "Sequence",
    decoders: [
      { type: "Replace", pattern: { String: "▁" }, content: " " },
      { type: "ByteFallback" },
      { type: "Fuse" },
      { type: "Strip", content: " ", start: 1, stop: 0 },
    ],
  };
  const template = {
    type: "TemplateProcessing",
    single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
    pair: [
      { SpecialToken: { id: "<s>", type_id: 0 } },
      { Sequence: { id: "A", type_id: 0 } },
      { SpecialToken: { id: "<s>", type_id: 1 } },
      { Sequence: { id: "B", type_id: 1 } },
    ],
    special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
  };
  const sparse = vocab.filter(([p], i) => i < 259 || [...p].length > 1 || /^[a-z]$/.test(p));
  const variants = [
    { name: "T5-like (Metaspace always, split)", patch: {} },
    {
      name: "byte fallback, NFKC, Metaspace first, no split",
      patch: {
        normalizer: { type: "NFKC" },
        pre_tokenizer: { type: "Metaspace", replacement: "▁", prepend_scheme: "first", split: false },
        post_processor: template,
        decoder: llamaDecoder,
        model: { type: "Unigram", unk_id: 0, vocab, byte_fallback: true },
      },
    },
    { name: "Whitespace", patch: { pre_tokenizer: { type: "Whitespace" }, decoder: null } },
    {
      name: "sparse, Prepend and Replace, byte fallback",
      patch: {
        normalizer: {
          type: "Sequence",
          normalizers: [
            { type: "Prepend", prepend: "▁" },
            { type: "Replace", pattern: { String: " " }, content: "▁" },
          ],
        },
        pre_tokenizer: null,
        decoder: llamaDecoder,
        model: { type: "Unigram", unk_id: 0, vocab: sparse, byte_fallback: true },
      },
    },
    {
      // GPT-2's ByteLevel before a Unigram: the model sees byte-level
      // symbols, most of them ("Ġ" for a space) unknown pieces.
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
    "\t",
    "emoji 😀🎉 👍🏽 and flags 🇫🇷",
    "日本語のテキスト 中文 한국어",
    "accents: café naïve Ångström, combining e\u0301 and ﬁ ligature ①",
    "<s>starts with bos</s> and <s> inside<unk>",
    "pieces that are not text: <0x41><0xE6><0x97> <unk>x<unk>",
    "no spaces: " + text.slice(0, 2000).replace(/\s+/g, ""),
    "▁already▁metaspace ▁ ▁▁",
    "xyzzy qqqq ZZZZ 0000 ~~~~ ||||",
    randomText(1, 1000),
    randomText(2, 1000),
    randomText(3, 300),
  ];
  const r = rng(7);
  const decodes = [];
  for (let i = 0; i < 200; i++) {
    const n = 1 + Math.floor(r() * 12);
    const ids = [];
    for (let j = 0; j < n; j++) ids.push(r() < 0.5 ? Math.floor(r() * 259) : Math.floor(r() * vocab.length));
    decodes.push(ids);
  }
  decodes.push([3 + 0xe6, 3 + 0x97, 3 + 0xa5], [3 + 0xe6, 3 + 0x97], [3 + 0xff, 3 + 0x41], [1, 3 + 0xf0, 3 + 0x9f, 3 + 0x98, 3 + 0x80, 2]);

  const out = { tokenizers: require("tokenizers/package.json").version, node: process.version, pieces: vocab.length, variants: [] };
  for (const v of variants) {
    const json = Object.assign(JSON.parse(base), v.patch);
    const tok = tk.Tokenizer.fromString(JSON.stringify(json));
    const size = json.model.vocab.length;
    const res = { name: v.name, patch: v.patch, texts: [], decodes: [] };
    for (const t of texts) {
      const ids = (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
      const withSpecials = (await tok.encode(t, null, { addSpecialTokens: true })).getIds();
      // ids_special only where a template adds tokens.
      res.texts.push({ text: t, ids, ids_special: json.post_processor ? withSpecials : undefined, decoded: await tok.decode(ids, false) });
    }
    const t0 = Date.now();
    const all = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const ms = Date.now() - t0;
    const back = await tok.decode(all, false);
    res.opticks = { bytes: Buffer.byteLength(text), ids: all.length, sha256: sha256(all), head: all.slice(0, 50), round_trip: back === text, encode_ms: ms };
    for (const ids of decodes) {
      const ok = ids.filter((id) => id < size);
      res.decodes.push({ ids: ok, text: await tok.decode(ok, false) });
    }
    out.variants.push(res);
    console.error(`${v.name}: Opticks ${all.length} ids in ${ms} ms, round trip ${back === text}`);
  }
  fs.writeFileSync(path.join(outDir, "unigram_hf.json"), JSON.stringify(out) + "\n");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
