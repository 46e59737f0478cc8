#!/usr/bin/env python3
"""Reference DistilBERT heads (Hugging Face modeling_distilbert.py, eager attention) in plain PyTorch.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/distilbert_reference.py [--out models/bert/testdata/distilbert]
    /usr/bin/python3 tools/pytorch/distilbert_reference.py --check DIR   # a zoo DistilBERT checkpoint of any head
    /usr/bin/python3 tools/pytorch/distilbert_reference.py --sinusoidal [--out models/bert/testdata/distilbert_sin]

No `transformers` package is available here, so this file re-implements
transformers' modeling_distilbert.py with the same module names:

    class Embeddings: word_embeddings (padding_idx), position_embeddings
        (learned; with sinusoidal_pos_embds, create_sinusoidal_embeddings' fixed
        table, float32 values, requires_grad False), LayerNorm (eps 1e-12); no token types
    class MultiHeadSelfAttention: q_lin, k_lin, v_lin, out_lin; q / sqrt(dim_per_head),
        masked_fill(mask == 0, finfo.min), softmax
    class FFN: lin1, activation, lin2
    class TransformerBlock: attention, sa_layer_norm, ffn, output_layer_norm (post-norm, eps 1e-12)
    class Transformer: layer.N;  class DistilBertModel: embeddings, transformer (no pooler)
    DistilBertForMaskedLM: vocab_transform, activation, vocab_layer_norm, vocab_projector
        (weight tied to the word embeddings, its own bias)
    DistilBertForSequenceClassification: pre_classifier on the first token, ReLU,
        dropout (seq_classif_dropout), classifier
    DistilBertForTokenClassification: dropout (dropout), classifier
    DistilBertForQuestionAnswering: dropout (qa_dropout), qa_outputs

For each head it writes DIR/<head>/config.json and model.safetensors as
save_pretrained lays them out (the tied vocab_projector.weight left out, no
position_ids buffer) and golden.safetensors: the inputs, the logits, the
loss (a fixed random weighting of the logits, sum(logits * r), r ~ N(0, 0.25²)) and the
gradients of every parameter, in float64.

With --check DIR it loads a checkpoint zoo saved into the class its
config.json names with load_state_dict(strict=True) (vocab_projector.weight
filled from the word embeddings, as tie_weights does), which fails on a
missing or an unexpected key.
"""

import argparse
import math
import os
import sys
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_common import LABELS, TAGS, check_bugs, head_config, load_strict, output_weights, randomise_weights, shapes, weighted_loss, write_head  # noqa: E402

GENERATOR = "tools/pytorch/distilbert_reference.py"

# A tiny DistilBERT under DistilBertConfig's names.
CONFIG = OrderedDict(
    model_type="distilbert",
    vocab_size=24, dim=16, n_layers=2, n_heads=4, hidden_dim=32, activation="gelu",
    dropout=0.0, attention_dropout=0.0, qa_dropout=0.0, seq_classif_dropout=0.0,
    max_position_embeddings=12, sinusoidal_pos_embds=False, initializer_range=0.02,
    pad_token_id=0, tie_weights_=True,
)
EPS = 1e-12


class Flags:
    """Deliberate bugs, each off by default, to check the fixture catches them."""
    no_mask = False
    tanh_classifier = False  # RoBERTa's tanh for DistilBERT's ReLU
    no_positions = False  # the position table (the sinusoidal one) left out


def act(c, x):
    return F.gelu(x) if c["activation"] == "gelu" else F.relu(x)


def create_sinusoidal_embeddings(n_pos, dim, out):
    """transformers' _create_sinusoidal_embeddings: numpy float64 angles
    pos / 10000^(2(j//2)/dim), sin at even j and cos at odd j, written as
    float32 (torch.FloatTensor) into out, which no longer takes gradients."""
    import numpy as np
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out.requires_grad = False
    with torch.no_grad():
        out[:, 0::2] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
        out[:, 1::2] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    out.detach_()


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["dim"], padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["dim"])
        if c.get("sinusoidal_pos_embds"):
            create_sinusoidal_embeddings(c["max_position_embeddings"], c["dim"], self.position_embeddings.weight)
        self.LayerNorm = nn.LayerNorm(c["dim"], eps=EPS)

    def forward(self, ids, flags=None):
        pos = torch.arange(ids.shape[1])[None].expand_as(ids)
        if flags is not None and flags.no_positions:
            return self.LayerNorm(self.word_embeddings(ids))
        return self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(pos))


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_heads, self.dim = c["n_heads"], c["dim"]
        self.q_lin = nn.Linear(c["dim"], c["dim"])
        self.k_lin = nn.Linear(c["dim"], c["dim"])
        self.v_lin = nn.Linear(c["dim"], c["dim"])
        self.out_lin = nn.Linear(c["dim"], c["dim"])

    def forward(self, x, mask, flags):
        bs, t, _ = x.shape
        dh = self.dim // self.n_heads

        def shape(y):
            return y.view(bs, -1, self.n_heads, dh).transpose(1, 2)

        q = shape(self.q_lin(x)) / math.sqrt(dh)
        k, v = shape(self.k_lin(x)), shape(self.v_lin(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        if not flags.no_mask:
            m = (mask == 0).view(bs, 1, 1, t).expand_as(scores)
            scores = scores.masked_fill(m, torch.finfo(scores.dtype).min)
        w = F.softmax(scores, dim=-1)
        ctx = torch.matmul(w, v).transpose(1, 2).reshape(bs, -1, self.dim)
        return self.out_lin(ctx)


class FFN(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.lin1 = nn.Linear(c["dim"], c["hidden_dim"])
        self.lin2 = nn.Linear(c["hidden_dim"], c["dim"])

    def forward(self, x):
        return self.lin2(act(self.c, self.lin1(x)))


class TransformerBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = MultiHeadSelfAttention(c)
        self.sa_layer_norm = nn.LayerNorm(c["dim"], eps=EPS)
        self.ffn = FFN(c)
        self.output_layer_norm = nn.LayerNorm(c["dim"], eps=EPS)

    def forward(self, x, mask, flags):
        sa = self.sa_layer_norm(self.attention(x, mask, flags) + x)
        return self.output_layer_norm(self.ffn(sa) + sa)


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([TransformerBlock(c) for _ in range(c["n_layers"])])

    def forward(self, x, mask, flags):
        for blk in self.layer:
            x = blk(x, mask, flags)
        return x


class DistilBertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.transformer = Transformer(c)

    def forward(self, ids, mask, flags):
        return self.transformer(self.embeddings(ids, flags), mask, flags)


class DistilBertForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.distilbert = DistilBertModel(c)
        self.vocab_transform = nn.Linear(c["dim"], c["dim"])
        self.vocab_layer_norm = nn.LayerNorm(c["dim"], eps=EPS)
        self.vocab_projector = nn.Linear(c["dim"], c["vocab_size"])
        self.vocab_projector.weight = self.distilbert.embeddings.word_embeddings.weight  # tie_weights

    def forward(self, ids, mask, flags=Flags()):
        h = self.distilbert(ids, mask, flags)
        return {"logits": self.vocab_projector(self.vocab_layer_norm(act(self.c, self.vocab_transform(h))))}


class DistilBertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.distilbert = DistilBertModel(c)
        self.pre_classifier = nn.Linear(c["dim"], c["dim"])
        self.classifier = nn.Linear(c["dim"], len(c["id2label"]))
        self.dropout = nn.Dropout(c["seq_classif_dropout"])

    def forward(self, ids, mask, flags=Flags()):
        x = self.pre_classifier(self.distilbert(ids, mask, flags)[:, 0])
        x = torch.tanh(x) if flags.tanh_classifier else nn.ReLU()(x)
        return {"logits": self.classifier(self.dropout(x))}


class DistilBertForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.distilbert = DistilBertModel(c)
        self.dropout = nn.Dropout(c["dropout"])
        self.classifier = nn.Linear(c["dim"], len(c["id2label"]))

    def forward(self, ids, mask, flags=Flags()):
        return {"logits": self.classifier(self.dropout(self.distilbert(ids, mask, flags)))}


class DistilBertForQuestionAnswering(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.distilbert = DistilBertModel(c)
        self.qa_outputs = nn.Linear(c["dim"], 2)
        self.dropout = nn.Dropout(c["qa_dropout"])

    def forward(self, ids, mask, flags=Flags()):
        start, end = self.qa_outputs(self.dropout(self.distilbert(ids, mask, flags))).split(1, dim=-1)
        return {"start_logits": start.squeeze(-1), "end_logits": end.squeeze(-1)}


HEADS = OrderedDict([
    ("mlm", ("DistilBertForMaskedLM", DistilBertForMaskedLM, {})),
    ("seq", ("DistilBertForSequenceClassification", DistilBertForSequenceClassification, LABELS)),
    ("token", ("DistilBertForTokenClassification", DistilBertForTokenClassification, TAGS)),
    ("qa", ("DistilBertForQuestionAnswering", DistilBertForQuestionAnswering, {})),
])
TIED = {"vocab_projector.weight": "distilbert.embeddings.word_embeddings.weight"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/bert/testdata/distilbert")
    ap.add_argument("--check", help="a zoo checkpoint directory to load strictly instead")
    ap.add_argument("--sinusoidal", action="store_true", help="sinusoidal_pos_embds true (default --out models/bert/testdata/distilbert_sin)")
    args = ap.parse_args()
    if args.sinusoidal:
        CONFIG["sinusoidal_pos_embds"] = True
        if args.out == ap.get_default("out"):
            args.out = "models/bert/testdata/distilbert_sin"
    torch.set_default_dtype(torch.float64)
    if args.check:
        load_strict(args.check, HEADS, TIED)
        return
    pad = CONFIG["pad_token_id"]
    # [CLS] a a [SEP] b b [SEP], and a shorter row padded with [PAD] (0).
    ids = torch.tensor([[1, 5, 9, 3, 7, 13, 3, 17], [1, 6, 11, 3, 8, 3, 0, 0]])
    mask = ids.ne(pad).long()
    for head, (arch, cls, _) in HEADS.items():
        c = head_config(CONFIG, HEADS, head)
        gen = torch.Generator().manual_seed(1357)
        model = cls(c)
        randomise_weights(model, gen, pad, ["distilbert.embeddings.word_embeddings.weight"], norms=("norm.weight", "LayerNorm.weight"))
        model.eval()
        keys = [k for k in model.state_dict() if k not in TIED]
        out = model(ids, mask)
        # N(0, 0.25²): DistilBERT's LayerNorms at eps 1e-12 on these large
        # random weights give gradients up to ~90 with N(0, 1) weights, whose
        # float32 rounding (1e-6 relative) nears the test's absolute 1e-4.
        rs = output_weights(out, ids, mask)
        loss = weighted_loss(out, rs)
        bugs = ["no_mask"] + (["tanh_classifier"] if head == "seq" else []) + (["no_positions"] if c.get("sinusoidal_pos_embds") else [])
        check_bugs(head, out, rs, lambda f: model(ids, mask, f), bugs, Flags)
        write_head(os.path.join(args.out, head), model, c, OrderedDict(input_ids=ids, attention_mask=mask), out, GENERATOR, rs, loss, TIED)
        print("%s: %d tensors, outputs %s" % (arch, len(keys), shapes(out)))


if __name__ == "__main__":
    main()
