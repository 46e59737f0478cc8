// roberta_opticks.js runs Hugging Face's tokenizers (the npm package
// "tokenizers") on the whole of Opticks with datasets/testdata/roberta_bpe.json,
// the RoBERTa tokenizer.json that datasets.TrainRobertaBPE writes (a
// byte-level BPE of 600 tokens with <s> <pad> </s> <unk> <mask> at 0-4,
// <mask> with lstrip, RobertaProcessing; TestTrainRobertaBPEIsTheFixture
// checks that it is TrainRobertaBPE's output byte for byte), and writes the
// digests datasets' TestRobertaOpticksMatchesHuggingFace checks:
//
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/roberta_opticks.js \
//     $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt datasets/testdata
//
// writes datasets/testdata/roberta_opticks_hf.json: the whole text's ids
// without special tokens (count, sha256 of the ids joined by ",", the
// first 50) and with them (<s> text </s>: sha256), whether decoding gives
// the text back; and, for every line (trimmed, non-empty), the sha256 of
// all lines' ids (each line's ids joined by ",", lines by ";"), of their
// byte offsets ("start-end" joined the same way), and of consecutive
// lines as pairs (<s> A </s></s> B </s>: ids, then type ids).
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { Tokenizer } = require("tokenizers");

function sha256(s) {
  return crypto.createHash("sha256").update(s).digest("hex");
}

// byteOffsets converts tokenizers' offsets, in characters (code points),
// to byte offsets of the text's UTF-8.
function byteOffsets(text, offsets) {
  const chars = Array.from(text);
  const at = [0];
  for (const c of chars) at.push(at[at.length - 1] + Buffer.byteLength(c, "utf8"));
  return offsets.map(([a, b]) => [at[a], at[b]]);
}

async function main() {
  const [opticks, dir] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(path.join(dir, "roberta_bpe.json"));
  const text = fs.readFileSync(opticks, "utf8");
  const res = { tokenizers: require("tokenizers/package.json").version };
  const t0 = Date.now();
  const all = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
  const ms = Date.now() - t0;
  const sp = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
  const back = await tok.decode(all, false);
  res.opticks = { bytes: Buffer.byteLength(text), ids: all.length, sha256: sha256(all.join(",")), head: all.slice(0, 50),
    ids_special: sp.length, sha256_special: sha256(sp.join(",")), round_trip: back === text, encode_ms: ms };
  const lines = text.split("\n").map((s) => s.trim()).filter((s) => s !== "");
  const ids = [], offs = [], pairIDs = [], pairTypes = [];
  for (const l of lines) {
    const e = await tok.encode(l, null, { addSpecialTokens: false });
    ids.push(e.getIds().join(","));
    offs.push(byteOffsets(l, e.getOffsets()).map(([a, b]) => `${a}-${b}`).join(","));
  }
  for (let i = 0; i + 1 < lines.length; i += 2) {
    const e = await tok.encode(lines[i], lines[i + 1], { addSpecialTokens: true });
    pairIDs.push(e.getIds().join(","));
    pairTypes.push(e.getTypeIds().join(","));
  }
  res.lines = { n: lines.length, pairs: pairIDs.length, sha256_ids: sha256(ids.join(";")), sha256_offsets: sha256(offs.join(";")),
    sha256_pair_ids: sha256(pairIDs.join(";")), sha256_pair_types: sha256(pairTypes.join(";")) };
  fs.writeFileSync(path.join(dir, "roberta_opticks_hf.json"), JSON.stringify(res, null, 1) + "\n");
  console.log(`tokenizers ${res.tokenizers}: Opticks ${all.length} ids (${ms} ms), round trip ${res.opticks.round_trip}; ${lines.length} lines, ${pairIDs.length} pairs`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
