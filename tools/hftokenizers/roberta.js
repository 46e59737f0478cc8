// roberta.js runs Hugging Face's tokenizers (the npm package "tokenizers")
// on datasets/testdata/roberta_bpe.json, a byte-level BPE laid out as
// roberta-base's tokenizer.json (RobertaProcessing, <mask> with lstrip),
// and writes what datasets' TestRobertaProcessingMatchesHuggingFace checks:
//
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/roberta.js \
//     $(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt datasets/testdata
//
// writes datasets/testdata/roberta_bpe_hf.json: for each text (Opticks's
// first 300 non-empty lines and some edge cases) its ids without special
// tokens with their offsets (converted from characters to UTF-8 bytes),
// and its ids and token type ids with them (<s> A </s>); for
// consecutive lines as pairs, ids and type ids of <s> A </s></s> B </s>.
// (The fixture itself comes from datasets' TestWriteRobertaFixture.)
"use strict";
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");

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
  const lines = fs.readFileSync(opticks, "utf8").split("\n").map((s) => s.trim()).filter((s) => s !== "").slice(0, 300);
  const edge = [
    "The <mask> sat on the mat.", "<mask>", "a<mask>b", "  leading and trailing  ", "<s>light</s> and <pad>",
    "Newton’s prism — “colours” ½ 日本語 😀", "tabs\tand\nnewlines\r\n", "x",
    "日本 ab😀c  x", "The  <mask>  sat <mask>", "   ", "a  b   c\t\t d",
  ];
  const res = { tokenizers: require("tokenizers/package.json").version, singles: [], pairs: [] };
  for (const text of lines.concat(edge)) {
    const plain = await tok.encode(text, null, { addSpecialTokens: false });
    const sp = await tok.encode(text, null, { addSpecialTokens: true });
    res.singles.push({ text, ids: plain.getIds(), ids_special: sp.getIds(), type_ids: sp.getTypeIds(), offsets: byteOffsets(text, plain.getOffsets()) });
  }
  const all = lines.concat(edge);
  for (let i = 0; i + 1 < all.length; i += 2) {
    const enc = await tok.encode(all[i], all[i + 1], { addSpecialTokens: true });
    res.pairs.push({ a: all[i], b: all[i + 1], ids: enc.getIds(), type_ids: enc.getTypeIds() });
  }
  fs.writeFileSync(path.join(dir, "roberta_bpe_hf.json"), JSON.stringify(res) + "\n");
  console.log(`tokenizers ${res.tokenizers}: ${res.singles.length} texts, ${res.pairs.length} pairs`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
