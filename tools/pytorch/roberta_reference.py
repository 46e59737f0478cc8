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
import json
import os
import sys
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import BertEncoder, BertPooler, Flags, hidden_act  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

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


class RobertaClassificationHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        p = c["classifier_dropout"] if c["classifier_dropout"] is not None else c["hidden_dropout_prob"]
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.dropout = nn.Dropout(p)
        self.out_proj = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, h, flags):
        x = self.dropout(h[:, 0, :])
        x = self.dense(x)
        if not flags.no_pooler_tanh:
            x = torch.tanh(x)
        return self.out_proj(self.dropout(x))


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
        self.classifier = RobertaClassificationHead(c)

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


LABELS = {"id2label": {"0": "neg", "1": "pos", "2": "mixed"}, "label2id": {"neg": 0, "pos": 1, "mixed": 2}}
TAGS = {"id2label": {"0": "O", "1": "B-PER", "2": "I-PER"}, "label2id": {"O": 0, "B-PER": 1, "I-PER": 2}}
HEADS = OrderedDict([
    ("mlm", ("RobertaForMaskedLM", RobertaForMaskedLM, {})),
    ("seq", ("RobertaForSequenceClassification", RobertaForSequenceClassification, LABELS)),
    ("token", ("RobertaForTokenClassification", RobertaForTokenClassification, TAGS)),
    ("qa", ("RobertaForQuestionAnswering", RobertaForQuestionAnswering, {})),
])
TIED = ["lm_head.decoder.weight", "lm_head.decoder.bias"]


def config(head):
    arch, _, extra = HEADS[head]
    c = OrderedDict(CONFIG)
    c["architectures"] = [arch]
    c.update(extra)
    return c


def randomise(model, gen, pad):
    """Large random values everywhere, so that bugs show (as bert_reference.py)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("LayerNorm.weight") or name.endswith("layer_norm.weight"):
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
            else:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen, dtype=torch.float64))
        model.roberta.embeddings.word_embeddings.weight[pad].zero_()
        model.roberta.embeddings.position_embeddings.weight[pad].zero_()


def check(path):
    with open(os.path.join(path, "config.json")) as fh:
        c = json.load(fh)
    arch = c["architectures"][0]
    cls = {a: k for a, k, _ in HEADS.values()}[arch]
    model = cls(c).to(torch.float64)
    state, _ = read_safetensors(os.path.join(path, "model.safetensors"))
    state = OrderedDict((k, v.to(torch.float64)) for k, v in state.items())
    want = set(model.state_dict()) - set(TIED)
    got = set(state)
    assert got == want, ("missing", sorted(want - got), "unexpected", sorted(got - want))
    if arch == "RobertaForMaskedLM":
        state["lm_head.decoder.weight"] = state["roberta.embeddings.word_embeddings.weight"]
        state["lm_head.decoder.bias"] = state["lm_head.bias"]
    model.load_state_dict(state, strict=True)
    print("%s: %s loads with strict=True (%d tensors, no roberta.pooler.*)" % (path, arch, len(got)))


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
        check(args.check)
        return
    pad = CONFIG["pad_token_id"]
    # <s> a a </s></s> b b </s>, and a shorter row padded with <pad> (1):
    # its positions are 2…7 then 1, 1.
    ids = torch.tensor([[0, 5, 9, 2, 2, 7, 13, 2, 17], [0, 6, 11, 2, 2, 8, 2, 1, 1]])
    mask = ids.ne(pad).long()
    for head, (arch, cls, _) in HEADS.items():
        c = config(head)
        gen = torch.Generator().manual_seed(2468)
        model = cls(c)
        randomise(model, gen, pad)
        model.eval()
        keys = [k for k in model.state_dict() if k not in TIED]
        assert not any(k.startswith("roberta.pooler.") for k in keys), keys
        out = model(ids, mask)
        rgen = torch.Generator().manual_seed(97)
        # Per-token outputs are weighted 0 at the padding, whose outputs
        # transformers computes but nobody reads (and whose word and position
        # rows padding_idx keeps from learning).
        rs = OrderedDict()
        for k, v in out.items():
            r = torch.randn(v.shape, generator=rgen)
            if tuple(v.shape[:2]) == tuple(ids.shape):
                r = r * mask.reshape(mask.shape + (1,) * (v.dim() - 2))
            rs[k] = r
        loss = sum((v * rs[k]).sum() for k, v in out.items())
        loss.backward()
        # Each plausible bug must move the outputs clearly.
        lm_act = ["lm_hidden_act"] if head == "mlm" and c["hidden_act"] != "gelu" else []
        for bug in ["bert_positions"] + (["no_pooler_tanh"] if head == "seq" else []) + lm_act:
            f = Flags()
            setattr(f, bug, True)
            with torch.no_grad():
                o = model(ids, mask, f)
            d = max((o[k] - out[k]).abs().max().item() for k in out)
            print("  %s: bug %s moves the logits by %.3g" % (head, bug, d))
            assert d > 0.05, (head, bug, d)
        d = os.path.join(args.out, head)
        os.makedirs(d, exist_ok=True)
        state = OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items() if k not in TIED)
        write_safetensors(os.path.join(d, "model.safetensors"), state, {"format": "pt"})
        with open(os.path.join(d, "config.json"), "w") as fh:
            json.dump(c, fh, indent=2)
            fh.write("\n")
        golden = OrderedDict(input_ids=ids, attention_mask=mask)
        for k, v in out.items():
            golden[k] = v.detach().clone()
            golden["r." + k] = rs[k]
        golden["loss"] = loss.detach().reshape(())
        for k, p in model.named_parameters():
            if p.grad is not None:
                golden["grad." + k] = p.grad.detach().clone()
        write_safetensors(os.path.join(d, "golden.safetensors"), golden, {"generator": GENERATOR})
        print("%s: %d tensors, outputs %s" % (arch, len(keys), ", ".join("%s %s" % (k, tuple(v.shape)) for k, v in out.items())))


if __name__ == "__main__":
    Flags.bert_positions = False
    main()
