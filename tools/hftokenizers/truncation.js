// truncation.js measures how Hugging Face's tokenizers truncates a pair
// of texts longest-first (setTruncation(max_length), the default strategy)
// with BERT's post-processor ([CLS] A [SEP] B [SEP]), on a grid of lengths,
// and checks zoo's rule (finetune/classify.go longestFirst) against it:
//
//   NODE_PATH=/tmp/hftok/node_modules node tools/hftokenizers/truncation.js
//
// It prints the pairs where the rule and the library differ, and a count.
// Against tokenizers 0.23.2 (2026-11-22): 0 of 3888. Without the first cut
// of each text to max_length, 203 of them differ.
"use strict";
const { Tokenizer } = require("tokenizers");

// longestFirst is zoo's rule, as finetune/classify.go's longestFirst.
function longestFirst(n1, n2, maxLen, specials) {
  n1 = Math.min(n1, maxLen);
  n2 = Math.min(n2, maxLen);
  const room = Math.max(maxLen - specials, 0);
  if (n1 + n2 <= room) return [n1, n2];
  const swap = n1 > n2;
  if (swap) [n1, n2] = [n2, n1];
  let t1 = n1, t2 = Math.max(n1, room - n1);
  if (t1 + t2 > room) {
    t1 = Math.floor(room / 2);
    t2 = t1 + (room % 2);
  }
  if (swap) {
    [t1, t2] = [t2, t1];
    [n1, n2] = [n2, n1];
  }
  return [Math.min(n1, t1), Math.min(n2, t2)];
}

async function main() {
  const vocab = { "[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, a: 5 };
  const special = (id, type) => ({ SpecialToken: { id, type_id: type } });
  const seq = (id, type) => ({ Sequence: { id, type_id: type } });
  const tok = Tokenizer.fromString(JSON.stringify({
    version: "1.0", truncation: null, padding: null, added_tokens: [],
    normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [special("[CLS]", 0), seq("A", 0), special("[SEP]", 0)],
      pair: [special("[CLS]", 0), seq("A", 0), special("[SEP]", 0), seq("B", 1), special("[SEP]", 1)],
      special_tokens: {
        "[CLS]": { id: "[CLS]", ids: [2], tokens: ["[CLS]"] },
        "[SEP]": { id: "[SEP]", ids: [3], tokens: ["[SEP]"] },
      },
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
  }));
  const words = (n) => Array(n).fill("a").join(" ");
  let n = 0, differ = 0;
  for (let maxLen = 5; maxLen <= 16; maxLen++) {
    tok.setTruncation(maxLen);
    for (let n1 = 1; n1 <= 18; n1++) {
      for (let n2 = 1; n2 <= 18; n2++) {
        const types = (await tok.encode(words(n1), words(n2))).getTypeIds();
        const k1 = types.filter((t) => t === 0).length - 2; // [CLS] and the first [SEP]
        const k2 = types.filter((t) => t === 1).length - 1; // the last [SEP]
        const [z1, z2] = longestFirst(n1, n2, maxLen, 3);
        n++;
        if (z1 !== k1 || z2 !== k2) {
          differ++;
          console.log(`max_length ${maxLen}, texts of ${n1} and ${n2}: tokenizers keeps ${k1} and ${k2}, zoo ${z1} and ${z2}`);
        }
      }
    }
  }
  console.log(`${differ} of ${n} pairs differ`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
