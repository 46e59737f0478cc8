// wordpiece.js runs Hugging Face's tokenizers library on a WordPiece
// request written by wordpiece.go:
//
//   node wordpiece.js request.json > response.json
//
// request:  {"tokenizer": "tokenizer.json", "single": ["text", ...],
//            "pairs": [["a", "b"], ...], "decode": [[id, ...], ...]}
// response: {"tokenizers": version, "node": version,
//            "plain": [[id, ...], ...]  (single texts, no special tokens),
//            "special": [[[id, ...], [type id, ...]], ...]  (single texts, with them),
//            "pairs": [[[id, ...], [type id, ...]], ...],
//            "decoded": ["text", ...]}
//
// Ids are decoded with skip_special_tokens false, as zoo's Decode.
"use strict";
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

async function main() {
  const req = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  const tok = Tokenizer.fromFile(req.tokenizer);
  const res = {
    tokenizers: require("tokenizers/package.json").version,
    node: process.version,
    plain: [],
    special: [],
    pairs: [],
    decoded: [],
  };
  for (const t of req.single || []) {
    const plain = await tok.encode(t, null, { addSpecialTokens: false });
    res.plain.push(plain.getIds());
    const enc = await tok.encode(t, null);
    res.special.push([enc.getIds(), enc.getTypeIds()]);
  }
  for (const [a, b] of req.pairs || []) {
    const enc = await tok.encode(a, b);
    res.pairs.push([enc.getIds(), enc.getTypeIds()]);
  }
  for (const ids of req.decode || []) {
    res.decoded.push(await tok.decode(ids, false));
  }
  process.stdout.write(JSON.stringify(res));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
