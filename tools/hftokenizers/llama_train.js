// llama_train.js trains a Llama-2-style byte-fallback BPE with Hugging
// Face's tokenizers (the npm package "tokenizers", its own BpeTrainer)
// with the settings datasets.TrainLlamaBPE uses, and writes the golden
// datasets' TestTrainLlamaBPEMatchesHuggingFace checks:
//
//   ZOO_LLAMA_TRAIN_OUT=/tmp/zoollama go test ./datasets -run TestTrainLlamaBPEMatchesHuggingFace
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/llama_train.js \
//     $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt datasets/testdata /tmp/zoollama
//
// writes datasets/testdata/llama_bpe_train_hf.json: the vocabulary and
// merges (their sha256, count, first and last few) and the ids of a few
// texts and of the whole text encoded by tokenizers with that tokenizer.
// Given the folder where the Go test saved TrainLlamaBPE's two
// tokenizers (the third argument), it compares hf-settings.json's
// vocabulary and merges with tokenizers' token by token and encodes the
// texts with it in tokenizers (the ids must be the same), and writes
// tokenizers' ids with defaults.json (TrainLlamaBPE's default settings,
// which tokenizers' trainer cannot be set to from node), which the Go
// test compares with zoo's. It exits with status 1 if anything differs.
//
// The trainer: a byte-fallback BPE; normalizer Replace("\r\n", "") and
// Replace("\n", "") (tokenizers trains on a file line by line, keeping the
// line end, which TrainLlamaBPE drops as SentencePiece does); Metaspace
// ("▁", prepend_scheme "always", split). Node cannot configure the
// BpeTrainer (Tokenizer.train uses the model's default: 30,000 tokens,
// min_frequency 0, no special tokens, no length limit), so the script
// cuts its merges to the first ones that fill VOCAB tokens (training is
// greedy: a smaller vocabulary has exactly those merges) and lays the
// file out as TrainLlamaBPE does (and Hugging Face's Llama conversion):
// <unk> <s> </s> (ids 0-2), <0x00> … <0xFF> (ids 3-258), the alphabet in
// code point order, then the merged tokens in merge order; Llama 2's
// normalizer, template and decoders. It reports how many of the merges
// kept have tokens of more than 16 characters (TrainLlamaBPE's default
// MaxPieceLength; they must be none for the vocabularies to agree) and
// the least count of a merge kept is not known to tokenizers' output, so
// the Go side's MinFrequency 2 is checked by the vocabulary's size.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const os = require("os");
const tk = require("tokenizers");

const VOCAB = 8000;

function sha256(s) {
  return crypto.createHash("sha256").update(s).digest("hex");
}

const pairOf = (m) => (Array.isArray(m) ? m : m.split(" "));

async function main() {
  const [textPath, outDir, zooDir] = process.argv.slice(2);
  const text = fs.readFileSync(textPath, "utf8");

  const trainer = new tk.Tokenizer(tk.BPE.init({}, [], { byteFallback: true }));
  trainer.setNormalizer(tk.sequenceNormalizer([tk.replace("\r\n", ""), tk.replace("\n", "")]));
  trainer.setPreTokenizer(tk.metaspacePreTokenizer("▁", "always", true));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "llama-train-"));
  const t0 = Date.now();
  trainer.train([textPath]);
  const trainMs = Date.now() - t0;
  trainer.save(path.join(tmp, "trained.json"));
  const trained = JSON.parse(fs.readFileSync(path.join(tmp, "trained.json"), "utf8"));

  // The alphabet: the trained tokens that no merge made, in id order
  // (tokenizers gives them ids in code point order).
  const allMerges = trained.model.merges.map(pairOf);
  const madeByMerge = new Set(allMerges.map(([a, b]) => a + b));
  const byId = Object.entries(trained.model.vocab).sort((x, y) => x[1] - y[1]).map(([t]) => t);
  const alphabet = byId.filter((t) => !madeByMerge.has(t));
  const vocab = ["<unk>", "<s>", "</s>"];
  for (let b = 0; b < 256; b++) vocab.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  const seen = new Set(vocab);
  for (const t of alphabet) if (!seen.has(t)) (seen.add(t), vocab.push(t));
  const merges = [];
  for (const [a, b] of allMerges) {
    if (vocab.length >= VOCAB) break;
    merges.push([a, b]);
    if (!seen.has(a + b)) (seen.add(a + b), vocab.push(a + b));
  }
  const long = merges.filter(([a, b]) => [...(a + b)].length > 16).length;

  const vocabObj = {};
  vocab.forEach((t, i) => (vocabObj[t] = i));
  const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const file = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
    normalizer: { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "▁" }, { type: "Replace", pattern: { String: " " }, content: "▁" }] },
    pre_tokenizer: null,
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
      pair: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "<s>", type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } }],
      special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
    },
    decoder: {
      type: "Sequence",
      decoders: [{ type: "Replace", pattern: { String: "▁" }, content: " " }, { type: "ByteFallback" }, { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }],
    },
    model: { type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab: vocabObj, merges },
  };
  const hf = tk.Tokenizer.fromString(JSON.stringify(file));

  const texts = ["Hello world", "In 1704, 12 colours\tand\nlines  with  spaces", "日本語 😀 é ﬁ", "<s> inside </s><unk>", "▁already ▁metaspace", ""];
  const encode = async (tok) => {
    const out = { texts: [] };
    for (const t of texts) {
      out.texts.push({ text: t, ids: (await tok.encode(t, null, { addSpecialTokens: false })).getIds(), ids_special: (await tok.encode(t, null, { addSpecialTokens: true })).getIds() });
    }
    const t1 = Date.now();
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    out.opticks = { bytes: Buffer.byteLength(text), ids: ids.length, sha256: sha256(ids.join(",")), head: ids.slice(0, 40), encode_ms: Date.now() - t1, round_trip: (await tok.decode(ids, false)) === text };
    return out;
  };
  const enc = await encode(hf);
  const out = {
    tokenizers: require("tokenizers/package.json").version,
    node: process.version,
    vocab_size: vocab.length,
    alphabet: alphabet.length,
    merges: merges.length,
    trained_merges: allMerges.length,
    merges_over_16_chars: long,
    vocab_sha256: sha256(vocab.join("\n")),
    merges_sha256: sha256(merges.map((m) => m.join(" ")).join("\n")),
    first_merges: merges.slice(0, 10),
    last_merges: merges.slice(-10),
    train_ms: trainMs,
    texts: enc.texts,
    opticks: enc.opticks,
  };
  console.error(`tokenizers ${out.tokenizers}: alphabet ${alphabet.length}, ${merges.length} merges for ${vocab.length} tokens (${allMerges.length} trained in ${trainMs} ms), ${long} over 16 characters`);
  console.error(`tokenizers' file: Opticks ${enc.opticks.ids} ids, sha256 ${enc.opticks.sha256}, round trip ${enc.opticks.round_trip}`);

  let bad = 0;
  if (zooDir) {
    // The same settings: the same vocabulary, merges and ids.
    const zooRaw = fs.readFileSync(path.join(zooDir, "hf-settings.json"), "utf8");
    const zoo = JSON.parse(zooRaw);
    const zv = Object.entries(zoo.model.vocab).sort((x, y) => x[1] - y[1]).map(([t]) => t);
    const zm = zoo.model.merges.map(pairOf);
    const vDiff = zv.findIndex((t, i) => t !== vocab[i]);
    const mDiff = zm.findIndex((m, i) => !merges[i] || m[0] !== merges[i][0] || m[1] !== merges[i][1]);
    const same = zv.length === vocab.length && vDiff < 0 && zm.length === merges.length && mDiff < 0;
    console.error(`zoo's file: ${zv.length} tokens, ${zm.length} merges; vocabulary and merges ${same ? "identical" : `DIFFER (token ${vDiff}: ${zv[vDiff]} vs ${vocab[vDiff]}; merge ${mDiff}: ${zm[mDiff]} vs ${merges[mDiff]})`}`);
    const zenc = await encode(tk.Tokenizer.fromString(zooRaw));
    const idsSame = zenc.opticks.sha256 === enc.opticks.sha256 && JSON.stringify(zenc.texts) === JSON.stringify(enc.texts);
    console.error(`zoo's file in tokenizers: Opticks ${zenc.opticks.ids} ids, sha256 ${zenc.opticks.sha256}: ${idsSame ? "identical" : "DIFFERENT"} ids`);
    out.zoo = { vocab_and_merges_identical: same, ids_identical: idsSame, opticks: zenc.opticks };
    if (!same || !idsSame) bad = 1;

    // TrainLlamaBPE's defaults (digits split, pieces of at most 16
    // characters, character coverage 0.99995), which the trainer cannot
    // be set to from node: tokenizers' ids with zoo's file, which the Go
    // test compares with zoo's own encoding.
    const dRaw = fs.readFileSync(path.join(zooDir, "defaults.json"), "utf8");
    const denc = await encode(tk.Tokenizer.fromString(dRaw));
    const d = JSON.parse(dRaw);
    out.zoo_defaults = { vocab_size: Object.keys(d.model.vocab).length, merges: d.model.merges.length, texts: denc.texts, opticks: denc.opticks };
    console.error(`zoo's file with the defaults in tokenizers: ${out.zoo_defaults.vocab_size} tokens, ${out.zoo_defaults.merges} merges; Opticks ${denc.opticks.ids} ids, sha256 ${denc.opticks.sha256}, round trip ${denc.opticks.round_trip}`);
  }
  fs.writeFileSync(path.join(outDir, "llama_bpe_train_hf.json"), JSON.stringify(out) + "\n");
  process.exit(bad);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
