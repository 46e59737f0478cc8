#!/usr/bin/env python3
"""Reference BertForTokenClassification and BertForQuestionAnswering (no pooler) in plain PyTorch.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/bert_heads_reference.py [--out models/bert/testdata/heads]
    /usr/bin/python3 tools/pytorch/bert_heads_reference.py --check DIR   # a zoo checkpoint of either head

No `transformers` package is available here, so this file re-implements
transformers' modeling_bert.py heads with the same module names, on the
backbone of bert_reference.py. Both build their backbone as transformers
does, `BertModel(config, add_pooling_layer=False)`:

    class BertForTokenClassification(BertPreTrainedModel):
        self.bert = BertModel(config, add_pooling_layer=False)
        self.dropout = nn.Dropout(classifier_dropout or hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
    class BertForQuestionAnswering(BertPreTrainedModel):
        self.bert = BertModel(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, config.num_labels)  # num_labels 2
        start_logits, end_logits = logits.split(1, dim=-1)  # squeezed

so state_dict() has no bert.pooler.* keys. For each head the script writes
DIR/<head>/config.json and model.safetensors as save_pretrained lays them
out (the backbone keys under "bert.", no position_ids buffer, as
transformers 5 writes them) and golden.safetensors: the inputs and the
logits in float64.

With --check DIR it loads a checkpoint zoo saved (its config.json names the
head) into the matching class with load_state_dict(strict=True), which
fails on a missing or an unexpected key, as transformers' load report
flags them; zoo writes float32, read here as float64.
"""

import argparse
import os
import sys
from collections import OrderedDict

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import CONFIG as BASE, BertEmbeddings, BertEncoder, Flags, randomise  # noqa: E402
from bert_common import TAGS, head_config, load_strict, shapes, write_head  # noqa: E402

GENERATOR = "tools/pytorch/bert_heads_reference.py"


class BertModelNoPooler(nn.Module):
    """BertModel(config, add_pooling_layer=False): embeddings and encoder."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)

    def forward(self, ids, types, mask):
        ext = (1.0 - mask[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
        return self.encoder(self.embeddings(ids, types, Flags()), ext)


class BertForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModelNoPooler(c)
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, ids, types, mask):
        return {"logits": self.classifier(self.dropout(self.bert(ids, types, mask)))}


class BertForQuestionAnswering(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModelNoPooler(c)
        self.qa_outputs = nn.Linear(c["hidden_size"], 2)

    def forward(self, ids, types, mask):
        start, end = self.qa_outputs(self.bert(ids, types, mask)).split(1, dim=-1)
        return {"start_logits": start.squeeze(-1), "end_logits": end.squeeze(-1)}


HEADS = {
    "token": ("BertForTokenClassification", BertForTokenClassification, TAGS),
    "qa": ("BertForQuestionAnswering", BertForQuestionAnswering, {}),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/bert/testdata/heads")
    ap.add_argument("--check", help="a zoo checkpoint directory to load strictly instead")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    if args.check:
        load_strict(args.check, HEADS, note=", no bert.pooler.*")
        return
    ids = torch.tensor([[1, 5, 9, 2, 7, 13, 2, 17], [1, 6, 11, 2, 8, 2, 0, 0]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]])
    for head, (arch, cls, _) in HEADS.items():
        c = head_config(BASE, HEADS, head)
        gen = torch.Generator().manual_seed(4321)
        model = cls(c)
        # randomise() zeroes the pad row through model.bert.embeddings.
        randomise(model, gen)
        model.eval()
        keys = list(model.state_dict())
        assert not any(k.startswith("bert.pooler.") for k in keys), keys
        with torch.no_grad():
            out = model(ids, types, mask)
        golden = OrderedDict(input_ids=ids, token_type_ids=types, attention_mask=mask)
        write_head(os.path.join(args.out, head), model, c, golden, out, GENERATOR)
        print("%s: %d tensors, outputs %s" % (arch, len(keys), shapes(out)))

if __name__ == "__main__":
    main()
