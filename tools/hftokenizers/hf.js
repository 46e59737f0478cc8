// hf.js runs Hugging Face's tokenizers library (the npm package
// "tokenizers", its Node bindings) on a request written by main.go:
//
//   node hf.js request.json > response.json
//
// request:  {"tokenizer": "tokenizer.json", "encode": ["text file", ...], "decode": [[id, ...], ...]}
// response: {"tokenizers": version, "native": version, "node": version,
//            "encoded": [[id, ...], ...], "decoded": ["text", ...]}
//
// "native" is the version of the separate npm package holding the
// compiled library, when there is one (tokenizers 0.13.x; 0.23.x ships
// its binaries inside the package).
//
// Texts are encoded without special tokens added around them (zoo's
// Tokenize adds none) and ids are decoded with skip_special_tokens false
// (zoo's Decode writes every token).
"use strict";
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

async function main() {
  const req = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  const tok = Tokenizer.fromFile(req.tokenizer);
  const res = {
    tokenizers: require("tokenizers/package.json").version,
    native: "",
    node: process.version,
    encoded: [],
    decoded: [],
  };
  for (const name of [`tokenizers-${process.platform}-${process.arch}-gnu`, `tokenizers-${process.platform}-${process.arch}`]) {
    try {
      res.native = `${name} ${require(`${name}/package.json`).version}`;
      break;
    } catch (e) {
      // not installed: the binary is inside the tokenizers package
    }
  }
  for (const path of req.encode || []) {
    const text = fs.readFileSync(path, "utf8");
    const enc = await tok.encode(text, null, { addSpecialTokens: false });
    res.encoded.push(enc.getIds());
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
