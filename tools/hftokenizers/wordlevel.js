// wordlevel.js checks zoo's word-level tokenizer (datasets.WordLevel)
// against Hugging Face's tokenizers library on a request that zoo's test
// writes:
//
//   ZOO_WORDLEVEL_DUMP=/tmp/wl go test ./datasets -run TestWordLevelDumpForHuggingFace
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/wordlevel.js /tmp/wl/request.json
//
// With ZOO_WORDLEVEL_TRAIN=train.tsv (tools/cmudict2tsv's) the test trains
// on both columns of that file and adds every line of the files in
// ZOO_WORDLEVEL_TEXTS (comma-separated) to the texts, both columns, and
// one text of every Unicode scalar value between two words; without, it
// writes the sample of TestWordLevelMatchesHuggingFace.
//
// request:  {"tokenizer": "tokenizer.json", "texts": ["text", ...],
//            "ids": [[id, ...], ...]  (zoo's ids of each text),
//            "decode": [[id, ...], ...], "decoded": ["text", ...]  (zoo's decodes)}
// output:   a summary on standard error, and on standard output
//           {"tokenizers": version, "node": version, "texts": n,
//            "encoded": [[id, ...], ...], "decoded": ["text", ...],
//            "encode_differ": n, "decode_differ": n, "saved_identical": bool}
//
// Texts are encoded without special tokens added around them and ids
// decoded with skip_special_tokens false, as zoo's Encode and Decode.
// "saved_identical" tells whether tokenizers writes the tokenizer.json
// back byte for byte (Tokenizer.save, pretty). It exits with status 1 if
// any text or decode differs.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { Tokenizer } = require("tokenizers");

function same(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

async function main() {
  const req = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  const tok = Tokenizer.fromFile(req.tokenizer);
  const res = {
    tokenizers: require("tokenizers/package.json").version,
    node: process.version,
    texts: req.texts.length,
    encoded: [],
    decoded: [],
    encode_differ: 0,
    decode_differ: 0,
    saved_identical: false,
  };
  for (const [i, t] of req.texts.entries()) {
    const ids = (await tok.encode(t, null, { addSpecialTokens: false })).getIds();
    res.encoded.push(ids);
    if (req.ids && !same(ids, req.ids[i])) {
      if (res.encode_differ < 5) {
        console.error(`text ${i} ${JSON.stringify(t).slice(0, 200)}: tokenizers ${JSON.stringify(ids).slice(0, 200)}, zoo ${JSON.stringify(req.ids[i]).slice(0, 200)}`);
      }
      res.encode_differ++;
    }
  }
  for (const [i, ids] of (req.decode || []).entries()) {
    const text = await tok.decode(ids, false);
    res.decoded.push(text);
    if (req.decoded && text !== req.decoded[i]) {
      if (res.decode_differ < 5) {
        console.error(`decode ${i}: tokenizers ${JSON.stringify(text)}, zoo ${JSON.stringify(req.decoded[i])}`);
      }
      res.decode_differ++;
    }
  }
  const resaved = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "wordlevel-")), "tokenizer.json");
  tok.save(resaved, true);
  const orig = fs.readFileSync(req.tokenizer, "utf8");
  res.saved_identical = fs.readFileSync(resaved, "utf8") === orig.replace(/\n$/, "");
  console.error(
    `tokenizers ${res.tokenizers} (node ${res.node}): ${res.texts} texts, ${res.encode_differ} encoded differently; ` +
      `${res.decoded.length} decodes, ${res.decode_differ} different; tokenizer.json written back identically: ${res.saved_identical}`,
  );
  process.stdout.write(JSON.stringify(res));
  if (res.encode_differ > 0 || res.decode_differ > 0) {
    process.exit(1);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
