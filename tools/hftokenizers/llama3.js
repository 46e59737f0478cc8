// llama3.js trains Llama-3- and Qwen2-style tokenizers (a byte-level BPE
// behind a Split pre-tokenizer with the model's regular expression, then
// ByteLevel without its own regex) with Hugging Face's tokenizers (the
// npm package "tokenizers", its own BpeTrainer) on a text, and writes what
// datasets' TestLlama3BPEMatchesHuggingFace checks:
//
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/llama3.js \
//     $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt datasets/testdata
//
// writes datasets/testdata/llama3_bpe.json and qwen2_bpe.json (the
// tokenizers) and llama3_bpe_hf.json (tokenizers' ids and decodes).
//
// Each tokenizer is trained with its own pattern (Llama 3's splits digits
// in threes, Qwen2's one by one) by the default BpeTrainer (node cannot
// configure it), then cut to its first MERGES merges and laid out as the
// hub's files: the 256 byte-level characters (ids 0-255, in byte order),
// the merged tokens in merge order, then the special tokens as added
// tokens. Llama 3's layout: no normalizer, ignore_merges, a
// TemplateProcessing with <|begin_of_text|>; Qwen2's: NFC, no template.
// The edited files are loaded back with Tokenizer.fromString, so every id
// written is tokenizers' own.
//
// Besides the two layouts ("variants"), Llama 3's file is run with other
// pre-tokenizers: GPT-2's pattern in a Split; a ByteLevel with
// add_prefix_space and its own regex after the Split; a String pattern
// with every behavior, inverted or not; Llama 3's pattern with every
// behavior; and two Splits in a row. One more runs a lone Split in front
// of llama.js's byte-fallback BPE (datasets/testdata/llama_bpe.json, read
// from the output folder).
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const os = require("os");
const tk = require("tokenizers");

const MERGES = 2000;

const LLAMA3 = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const QWEN2 = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const GPT2 = String.raw`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`;

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
    " \t\n\r  \u00a0\u3000",
    "abcdefghijklmnopqrstuvwxyz",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:'\"()-",
    "'''sStTrRvVlLmMdDeE",
    "0123456789①٣",
    "日本語中文字漢",
    "éèàçñöüßſ",
    "😀🎉👍🏽🇫🇷",
    "\u0301\u0308ﬁÅ",
  ];
  let s = "";
  while ([...s].length < n) {
    const p = [...pools[Math.floor(r() * pools.length)]];
    s += p[Math.floor(r() * p.length)];
  }
  return s;
}

// bytesToUnicode is GPT-2's map of bytes to printable characters.
function bytesToUnicode() {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const out = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) out[b] = bs.includes(b) ? String.fromCodePoint(b) : String.fromCodePoint(256 + n++);
  return out;
}

const split = (pattern, behavior, invert) => ({ type: "Split", pattern, behavior: behavior || "Isolated", invert: !!invert });
const byteLevel = (addPrefixSpace, useRegex) => ({ type: "ByteLevel", add_prefix_space: addPrefixSpace, trim_offsets: true, use_regex: useRegex });
const preSeq = (...pretokenizers) => ({ type: "Sequence", pretokenizers });

// build trains a byte-level BPE with the pattern on textPath and returns
// the hub-style file.
function build(textPath, pattern, layout) {
  const pre = preSeq(split({ Regex: pattern }), byteLevel(false, false));
  const empty = {
    version: "1.0", truncation: null, padding: null, added_tokens: [], normalizer: layout.normalizer, pre_tokenizer: pre, post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: {}, merges: [] },
  };
  const trainer = tk.Tokenizer.fromString(JSON.stringify(empty));
  trainer.train([textPath]);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "llama3-"));
  trainer.save(path.join(tmp, "trained.json"));
  const trained = JSON.parse(fs.readFileSync(path.join(tmp, "trained.json"), "utf8"));
  const merges = trained.model.merges.slice(0, MERGES).map((m) => (Array.isArray(m) ? m : m.split(" ")));
  const vocab = {};
  bytesToUnicode().forEach((c, b) => (vocab[c] = b));
  let next = 256;
  for (const [a, b] of merges) {
    if (!(a in vocab) || !(b in vocab)) throw new Error(`merge ${a} ${b} of tokens not in the vocabulary`);
    if (!(a + b in vocab)) vocab[a + b] = next++;
  }
  const added = layout.specials.map((content, i) => ({ id: next + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: layout.normalizer,
    pre_tokenizer: pre,
    post_processor: layout.post(added),
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: Object.assign(empty.model, { ignore_merges: layout.ignoreMerges, vocab, merges }),
  };
}

const layouts = {
  llama3: {
    file: "llama3_bpe.json",
    pattern: LLAMA3,
    normalizer: null,
    ignoreMerges: true,
    specials: ["<|begin_of_text|>", "<|end_of_text|>"],
    post: (added) => ({
      type: "Sequence",
      processors: [
        { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
        {
          type: "TemplateProcessing",
          single: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
          pair: [
            { SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } },
            { Sequence: { id: "A", type_id: 0 } },
            { SpecialToken: { id: "<|begin_of_text|>", type_id: 1 } },
            { Sequence: { id: "B", type_id: 1 } },
          ],
          special_tokens: { "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [added[0].id], tokens: ["<|begin_of_text|>"] } },
        },
      ],
    }),
  },
  qwen2: {
    file: "qwen2_bpe.json",
    pattern: QWEN2,
    normalizer: { type: "NFC" },
    ignoreMerges: false,
    specials: ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    post: () => ({ type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false }),
  },
};

async function main() {
  const [textPath, outDir] = process.argv.slice(2);
  const text = fs.readFileSync(textPath, "utf8");

  const files = { llama_bpe: JSON.parse(fs.readFileSync(path.join(outDir, "llama_bpe.json"), "utf8")) };
  for (const [name, layout] of Object.entries(layouts)) {
    files[name] = build(textPath, layout.pattern, layout);
    fs.writeFileSync(path.join(outDir, layout.file), JSON.stringify(files[name]) + "\n");
  }

  const hostile = [
    "",
    " ",
    "Hello world",
    "I'm sure you're right; he'll say she'd go, it's ours, we've won, don't.",
    "I'M YOU'RE HE'LL SHE'D IT'S WE'VE DON'T 'S 'Ll 'lL 'rE 'Ve 'ſ 'ẞ 'ß ''s ' 's 'x 'l",
    // A contraction starts a match only where the letters before it end.
    "'Sx a'Sx a'sx a'ſx a'ẞx a'ßx a'Kx a'LLx a'Llx a'lx a'REx a'rx a'VEx a'vx a'Mx a'Dx a'Tx a'tſ x'ſ'll'Ve'D 9'sx .'sx",
    "1234567 12 123 1234 12345 ①②③④ ٣٤٥٦٧ 12.5 1,000,000 x1y22z333 ½Ⅻ",
    "日本語のテキスト 中文 한국어 Ελληνικά русский עברית العربية हिन्दी ไทย",
    "a\r\nb\r\n\r\nc\n\n\n  d \r\n \r\n e\r\r\n\n",
    "\r\n\r\n",
    "trailing   ",
    "  leading",
    "tabs\tand\t\t spaces \t\tx",
    "\u00a0nbsp\u3000ideographic\u2028ls\u0085nel \u00a0x",
    "emoji 😀🎉 👍🏽 and flags 🇫🇷 zwj 👨‍👩‍👧!",
    "!!!abc ...\n\n??x \"quoted\" (parens) --dash-- $100 #tag @user .\n",
    " !\n ?\r\n  ;  ",
    "e\u0301 café naïve ﬁ Å",
    "<|begin_of_text|>hi<|end_of_text|> <|endoftext|><|im_start|>user\n",
    "no spaces: " + text.slice(0, 2000).replace(/\s+/g, ""),
    randomText(1, 1000),
    randomText(2, 1000),
  ];
  const short = hostile.slice(0, 19);

  const variants = [
    { name: "llama3", base: "llama3", patch: {}, texts: hostile, decodes: true },
    { name: "qwen2", base: "qwen2", patch: {}, texts: hostile, decodes: true },
    { name: "GPT-2's pattern in a Split", base: "llama3", patch: { pre_tokenizer: preSeq(split({ Regex: GPT2 }), byteLevel(false, false)) }, texts: short },
    { name: "ByteLevel with add_prefix_space and its regex after the Split", base: "llama3", patch: { pre_tokenizer: preSeq(split({ Regex: LLAMA3 }), byteLevel(true, true)) }, texts: short },
    // Without a ByteLevel, a character missing from the vocabulary would be
    // dropped by tokenizers and refused by zoo: Llama 2's byte-fallback BPE
    // (llama.js's file, its normalizer and decoder) has none missing.
    { name: "a lone Split before llama_bpe.json's byte-fallback BPE", base: "llama_bpe", patch: { pre_tokenizer: split({ Regex: LLAMA3 }) }, texts: short },
    { name: "two Splits", base: "llama3", patch: { pre_tokenizer: preSeq(split({ String: "\n" }, "Removed"), preSeq(split({ Regex: LLAMA3 }), byteLevel(false, false))) }, texts: short },
  ];
  for (const behavior of ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]) {
    for (const invert of [false, true]) {
      variants.push({ name: `String " " ${behavior}${invert ? " inverted" : ""}`, base: "llama3", patch: { pre_tokenizer: preSeq(split({ String: " " }, behavior, invert), byteLevel(false, false)) }, texts: short });
    }
    if (behavior !== "Isolated") {
      variants.push({ name: `Llama 3's pattern ${behavior}`, base: "llama3", patch: { pre_tokenizer: preSeq(split({ Regex: LLAMA3 }, behavior), byteLevel(false, false)) }, texts: short });
    }
  }

  const out = { tokenizers: require("tokenizers/package.json").version, node: process.version, merges: MERGES, variants: [] };
  for (const v of variants) {
    const json = Object.assign(JSON.parse(JSON.stringify(files[v.base])), v.patch);
    const tok = tk.Tokenizer.fromString(JSON.stringify(json));
    const pre = tok.getPreTokenizer();
    const res = { name: v.name, base: v.base + (v.base.endsWith("_bpe") ? ".json" : "_bpe.json"), patch: v.patch, texts: [], decodes: [] };
    for (const t of v.texts) {
      const ids = (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
      const withSpecials = (await tok.encode(t, null, { addSpecialTokens: true })).getIds();
      // The words of the pre-tokenizer alone (no normalizer, no added
      // tokens), ByteLevel's byte symbols included: the split shows even
      // where the small vocabulary would give the same ids.
      const pieces = pre.preTokenizeString(t).map((p) => p[0]);
      res.texts.push({ text: t, pieces, ids, ids_special: withSpecials, decoded: await tok.decode(ids, false) });
    }
    const t0 = Date.now();
    const all = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const ms = Date.now() - t0;
    const back = await tok.decode(all, false);
    res.opticks = { bytes: Buffer.byteLength(text), ids: all.length, sha256: sha256(all), head: all.slice(0, 50), round_trip: back === text, encode_ms: ms };
    if (v.decodes) {
      // Many short random texts of the characters the patterns tell
      // apart: their words only.
      const rr = rng(11);
      const pool = [..." \t\n\r\r\n  \u00a0\u3000\u2028'''sStTlLrReEvVmMdDſxy0123456789①٣.,!?😀\u0301日"];
      res.random = [];
      for (let i = 0; i < 300; i++) {
        let t = "";
        const n = 1 + Math.floor(rr() * 24);
        for (let j = 0; j < n; j++) t += pool[Math.floor(rr() * pool.length)];
        res.random.push({ text: t, pieces: pre.preTokenizeString(t).map((p) => p[0]) });
      }

      const r = rng(7);
      const size = Object.keys(json.model.vocab).length + json.added_tokens.length;
      const decodes = [];
      for (let i = 0; i < 200; i++) {
        const n = 1 + Math.floor(r() * 12);
        const ids = [];
        // Favour the byte tokens: invalid UTF-8 runs.
        for (let j = 0; j < n; j++) ids.push(r() < 0.5 ? Math.floor(r() * 256) : Math.floor(r() * size));
        decodes.push(ids);
      }
      const id = (c) => json.model.vocab[bytesToUnicode()[c]];
      decodes.push([id(0xe6), id(0x97), id(0xa5)], [id(0xe6), id(0x97)], [id(0xff), id(0x41)], [size - 1, id(0xf0), id(0x9f), id(0x98), id(0x80), size - 2]);
      for (const ids of decodes) res.decodes.push({ ids, text: await tok.decode(ids, false) });
    }
    out.variants.push(res);
    console.error(`${v.name}: Opticks ${all.length} ids in ${ms} ms, round trip ${back === text}`);
  }
  fs.writeFileSync(path.join(outDir, "llama3_bpe_hf.json"), JSON.stringify(out) + "\n");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
