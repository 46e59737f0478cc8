#!/usr/bin/env python3
"""Reference RoBERTa heads (Hugging Face modeling_roberta.py, eager attention) in plain PyTorch.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/roberta_reference.py [--out models/bert/testdata/roberta]
    /usr/bin/python3 tools/pytorch/roberta_reference.py --check DIR   # a zoo RoBERTa checkpoint of any head
    /usr/bin/python3 tools/pytorch/roberta_reference.py --hidden-act relu   # models/bert/testdata/roberta_relu: RobertaLMHead keeps gelu

No `transformers` package is available here, so this file re-implements
transformers' modeling_roberta.py with the same module names, on the
encoder layers of bert_reference.py (RobertaLayer is BertLayer):

    class RobertaEmbeddings:  word_embeddings (padding_idx), position_embeddings
        (padding_idx), token_type_embeddings, LayerNorm; position ids from
        create_position_ids_from_input_ids: cumsum(ids != pad) * (ids != pad) + pad
    class RobertaModel(config, add_pooling_layer)
    class RobertaLMHead: dense, gelu (always), layer_norm, decoder (tied to
        the word embeddings) + bias
    class RobertaClassificationHead: dropout, dense, tanh, dropout, out_proj on <s>
        (bert_common.ClassificationHead)
    RobertaForMaskedLM, RobertaForSequenceClassification,
    RobertaForTokenClassification, RobertaForQuestionAnswering: all built on
        RobertaModel(config, add_pooling_layer=False), so none has roberta.pooler.*

For each head it writes DIR/<head>/config.json and model.safetensors as
save_pretrained lays them out (the tied lm_head.decoder.weight and
lm_head.decoder.bias left out, no position_ids buffer) and
golden.safetensors: the inputs, the logits, the loss (a fixed random
weighting of the logits, sum(logits * r)) and the gradients of every
parameter, in float64.

With --check DIR it loads a checkpoint zoo saved into the class its
config.json names with load_state_dict(strict=True) (the tied keys
filled from the word embeddings and lm_head.bias, as tie_weights does),
which fails on a missing or an unexpected key.
"""

import argparse
import os
import sys
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import BertEncoder, BertPooler, Flags, hidden_act  # noqa: E402
from bert_common import LABELS, TAGS, ClassificationHead, check_bugs, head_config, load_strict, output_weights, randomise_weights, shapes, weighted_loss, write_head  # noqa: E402

GENERATOR = "tools/pytorch/roberta_reference.py"

# A tiny RoBERTa: pad_token_id 1, positions from 2, one token type, as
# roberta-base (max_position_embeddings = T + pad + 1 would be 11 here;
# 12 leaves one spare).
CONFIG = OrderedDict(
    model_type="roberta",
    vocab_size=24, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0, max_position_embeddings=12, type_vocab_size=1,
    initializer_range=0.02, layer_norm_eps=1e-05, pad_token_id=1, bos_token_id=0, eos_token_id=2,
    position_embedding_type="absolute", use_cache=True, classifier_dropout=None,
)


def create_position_ids_from_input_ids(input_ids, padding_idx):
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = torch.cumsum(mask, dim=1).type_as(mask) * mask
    return incremental_indices.long() + padding_idx


class RobertaEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.padding_idx = c["pad_token_id"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], d, padding_idx=self.padding_idx)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], d, padding_idx=self.padding_idx)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], d)
        self.LayerNorm = nn.LayerNorm(d, eps=c["layer_norm_eps"])

    def forward(self, ids, flags):
        if flags.bert_positions:
            pos = torch.arange(ids.shape[1])[None].expand_as(ids)
        else:
            pos = create_position_ids_from_input_ids(ids, self.padding_idx)
        types = torch.zeros_like(ids)
        e = self.word_embeddings(ids) + self.token_type_embeddings(types)
        e = e + self.position_embeddings(pos)
        return self.LayerNorm(e)


class RobertaModel(nn.Module):
    def __init__(self, c, add_pooling_layer=True):
        super().__init__()
        self.embeddings = RobertaEmbeddings(c)
        self.encoder = BertEncoder(c)  # RobertaEncoder: the same layers and names
        self.pooler = BertPooler(c) if add_pooling_layer else None

    def forward(self, ids, mask, flags):
        ext = (1.0 - mask[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
        return self.encoder(self.embeddings(ids, flags), ext)


class RobertaLMHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.layer_norm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.decoder = nn.Linear(c["hidden_size"], c["vocab_size"])
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.decoder.bias = self.bias
        self.act = hidden_act(c)

    def forward(self, x, flags=Flags()):
        # RobertaLMHead calls gelu whatever hidden_act is; the bug
        # lm_hidden_act uses the encoder's activation instead.
        act = self.act if getattr(flags, "lm_hidden_act", False) else F.gelu
        return self.decoder(self.layer_norm(act(self.dense(x))))


def classifier_act(x, flags):
    """RobertaClassificationHead's tanh (the bug no_pooler_tanh leaves it out)."""
    return x if flags.no_pooler_tanh else torch.tanh(x)


class RobertaForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.roberta = RobertaModel(c, add_pooling_layer=False)
        self.lm_head = RobertaLMHead(c)
        self.lm_head.decoder.weight = self.roberta.embeddings.word_embeddings.weight  # tie_weights

    def forward(self, ids, mask, flags=Flags()):
        return {"logits": self.lm_head(self.roberta(ids, mask, flags), flags)}


class RobertaForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.roberta = RobertaModel(c, add_pooling_layer=False)
        self.classifier = ClassificationHead(c, classifier_act)  # RobertaClassificationHead

    def forward(self, ids, mask, flags=Flags()):
        return {"logits": self.classifier(self.roberta(ids, mask, flags), flags)}


class RobertaForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.roberta = RobertaModel(c, add_pooling_layer=False)
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, ids, mask, flags=Flags()):
        return {"logits": self.classifier(self.dropout(self.roberta(ids, mask, flags)))}


class RobertaForQuestionAnswering(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.roberta = RobertaModel(c, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(c["hidden_size"], 2)

    def forward(self, ids, mask, flags=Flags()):
        start, end = self.qa_outputs(self.roberta(ids, mask, flags)).split(1, dim=-1)
        return {"start_logits": start.squeeze(-1), "end_logits": end.squeeze(-1)}


HEADS = OrderedDict([
    ("mlm", ("RobertaForMaskedLM", RobertaForMaskedLM, {})),
    ("seq", ("RobertaForSequenceClassification", RobertaForSequenceClassification, LABELS)),
    ("token", ("RobertaForTokenClassification", RobertaForTokenClassification, TAGS)),
    ("qa", ("RobertaForQuestionAnswering", RobertaForQuestionAnswering, {})),
])
TIED = OrderedDict([("lm_head.decoder.weight", "roberta.embeddings.word_embeddings.weight"), ("lm_head.decoder.bias", "lm_head.bias")])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/bert/testdata/roberta")
    ap.add_argument("--check", help="a zoo checkpoint directory to load strictly instead")
    ap.add_argument("--hidden-act", default="gelu", help="the encoder's hidden_act (relu: default --out models/bert/testdata/roberta_relu)")
    args = ap.parse_args()
    if args.hidden_act != "gelu":
        CONFIG["hidden_act"] = args.hidden_act
        if args.out == ap.get_default("out"):
            args.out = "models/bert/testdata/roberta_" + args.hidden_act
    torch.set_default_dtype(torch.float64)
    if args.check:
        load_strict(args.check, HEADS, TIED, note=", no roberta.pooler.*")
        return
    pad = CONFIG["pad_token_id"]
    # <s> a a </s></s> b b </s>, and a shorter row padded with <pad> (1):
    # its positions are 2…7 then 1, 1.
    ids = torch.tensor([[0, 5, 9, 2, 2, 7, 13, 2, 17], [0, 6, 11, 2, 2, 8, 2, 1, 1]])
    mask = ids.ne(pad).long()
    for head, (arch, cls, _) in HEADS.items():
        c = head_config(CONFIG, HEADS, head)
        gen = torch.Generator().manual_seed(2468)
        model = cls(c)
        randomise_weights(model, gen, pad, ["roberta.embeddings.word_embeddings.weight", "roberta.embeddings.position_embeddings.weight"],
                          norms=("LayerNorm.weight", "layer_norm.weight"))
        model.eval()
        keys = [k for k in model.state_dict() if k not in TIED]
        assert not any(k.startswith("roberta.pooler.") for k in keys), keys
        out = model(ids, mask)
        # N(0, 1) weights, 0 at the padding (whose word and position rows
        # padding_idx keeps from learning).
        rs = output_weights(out, ids, mask, scale=1)
        loss = weighted_loss(out, rs)
        lm_act = ["lm_hidden_act"] if head == "mlm" and c["hidden_act"] != "gelu" else []
        bugs = ["bert_positions"] + (["no_pooler_tanh"] if head == "seq" else []) + lm_act
        check_bugs(head, out, rs, lambda f: model(ids, mask, f), bugs, Flags, masked=False)
        write_head(os.path.join(args.out, head), model, c, OrderedDict(input_ids=ids, attention_mask=mask), out, GENERATOR, rs, loss, TIED)
        print("%s: %d tensors, outputs %s" % (arch, len(keys), shapes(out)))


if __name__ == "__main__":
    Flags.bert_positions = False
    main()
