#!/usr/bin/env python3
"""Reference BERT (Hugging Face BertForPreTraining, eager attention) in plain PyTorch.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/bert_reference.py [--out models/bert/testdata/parity]

No `transformers` package is available here, so this file re-implements
transformers' modeling_bert.py (BertForPreTraining, absolute positions,
eager attention) with the same module names: model.state_dict() has the keys
BertForPreTraining.save_pretrained writes (`bert.embeddings.word_embeddings.weight`,
`bert.encoder.layer.0.attention.self.query.weight`, ..., `cls.predictions.bias`,
`cls.seq_relationship.weight`; `cls.predictions.decoder.weight` is tied to
the word embeddings and `cls.predictions.decoder.bias` to `cls.predictions.bias`,
so neither is written).

Semantics reproduced from HF:

* Embeddings: word(ids) + token_type(token_type_ids) + position(arange(T)),
  LayerNorm(eps), dropout.
* Attention: separate query, key, value Linear; heads by view(B,T,h,hd) and
  permute; scores = q k^T / sqrt(hd); plus the extended mask
  (1 - attention_mask)[:, None, None, :] * finfo.min; softmax; dropout;
  merge heads; BertSelfOutput: LayerNorm(dense(ctx) + x) (post-norm).
* Intermediate: act(dense(x)) (hidden_act "gelu" = exact erf GELU);
  BertOutput: LayerNorm(dense(h) + x).
* Pooler: tanh(dense(h[:, 0])).
* BertLMPredictionHead: transform (dense, act, LayerNorm), then decoder
  (tied to word embeddings) + bias. NSP: Linear(d, 2) on the pooled output.
* Loss: CE(mlm, labels, ignore_index=-100) + CE(nsp, next_sentence_label).

The fixture's weights are not HF's init (N(0, 0.02)): every tensor,
LayerNorms and biases included, is drawn large (see randomise) so that each
plausible bug in a re-implementation moves the outputs clearly; main()
asserts that for a missing token-type embedding, a missing mask, an untied
decoder and a missing pooler tanh.
"""

import argparse
import json
import math
import os
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

from bert_common import randomise_weights
from safetensors_io import write_safetensors

GENERATOR = "tools/pytorch/bert_reference.py"

CONFIG = OrderedDict(
    architectures=["BertForPreTraining"], model_type="bert",
    vocab_size=24, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0, max_position_embeddings=12, type_vocab_size=2,
    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
    position_embedding_type="absolute", use_cache=True, classifier_dropout=None,
)


class Flags:
    """Deliberate bugs, each off by default, to check the fixture catches them."""
    no_token_types = False
    no_mask = False
    untied = None  # a different decoder matrix
    no_pooler_tanh = False


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, ids, types, flags):
        T = ids.shape[1]
        e = self.word_embeddings(ids) + self.position_embeddings(torch.arange(T))[None]
        if not flags.no_token_types:
            e = e + self.token_type_embeddings(types)
        return self.LayerNorm(e)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.h = c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x, ext_mask):
        B, T, d = x.shape
        hd = d // self.h

        def heads(y):
            return y.view(B, T, self.h, hd).permute(0, 2, 1, 3)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        if ext_mask is not None:
            scores = scores + ext_mask
        p = scores.softmax(-1)
        return (p @ v).permute(0, 2, 1, 3).reshape(B, T, d)


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, x, m):
        return self.output(self.self(x, m), x)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = hidden_act(c)

    def forward(self, x):
        return self.act(self.dense(x))


def hidden_act(c):
    """transformers' ACT2FN[hidden_act] for the two activations the fixtures use."""
    return {"gelu": F.gelu, "relu": F.relu}[c.get("hidden_act", "gelu")]


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, x, m):
        a = self.attention(x, m)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, x, m):
        for l in self.layer:
            x = l(x, m)
        return x


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, h, flags):
        y = self.dense(h[:, 0])
        return y if flags.no_pooler_tanh else torch.tanh(y)


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)

    def forward(self, ids, types, mask, flags):
        ext = None
        if mask is not None and not flags.no_mask:
            ext = (1.0 - mask[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
        h = self.encoder(self.embeddings(ids, types, flags), ext)
        return h, self.pooler(h, flags)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, x):
        return self.LayerNorm(F.gelu(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = BertPredictionHeadTransform(c)
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))


class BertPreTrainingHeads(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = BertLMPredictionHead(c)
        self.seq_relationship = nn.Linear(c["hidden_size"], 2)


class BertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = BertModel(c)
        self.cls = BertPreTrainingHeads(c)

    def forward(self, ids, types, mask, labels, nsp_labels, flags=Flags()):
        h, pooled = self.bert(ids, types, mask, flags)
        t = self.cls.predictions.transform(h)
        dec = self.bert.embeddings.word_embeddings.weight if flags.untied is None else flags.untied
        mlm = t @ dec.T + self.cls.predictions.bias  # decoder tied to the word embeddings
        nsp = self.cls.seq_relationship(pooled)
        mlm_loss = F.cross_entropy(mlm.reshape(-1, mlm.shape[-1]), labels.reshape(-1), ignore_index=-100)
        nsp_loss = F.cross_entropy(nsp, nsp_labels)
        return dict(hidden=h, pooled=pooled, mlm_logits=mlm, nsp_logits=nsp,
                    mlm_loss=mlm_loss, nsp_loss=nsp_loss, loss=mlm_loss + nsp_loss)


def randomise(model, gen):
    """Large random values everywhere, so that bugs show (see the docstring)."""
    randomise_weights(model, gen, CONFIG["pad_token_id"], ["bert.embeddings.word_embeddings.weight"])


GRADS = ["bert.embeddings.word_embeddings.weight", "bert.embeddings.token_type_embeddings.weight",
         "bert.embeddings.position_embeddings.weight", "bert.encoder.layer.0.attention.self.query.weight",
         "bert.encoder.layer.1.output.LayerNorm.weight", "bert.pooler.dense.weight",
         "cls.predictions.transform.dense.weight", "cls.predictions.bias", "cls.seq_relationship.weight"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/bert/testdata/parity")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(1234)
    model = BertForPreTraining(CONFIG)
    randomise(model, gen)
    model.eval()

    # Two rows of 8: [CLS] a a [SEP] b b [SEP] x, and a shorter one padded.
    ids = torch.tensor([[1, 5, 9, 2, 7, 13, 2, 17], [1, 6, 11, 2, 8, 2, 0, 0]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]])
    labels = torch.tensor([[-100, 4, -100, -100, 19, -100, -100, 3], [-100, -100, 22, -100, 10, -100, -100, -100]])
    nsp_labels = torch.tensor([0, 1])

    out = model(ids, types, mask, labels, nsp_labels)
    out["loss"].backward()
    params = dict(model.named_parameters())

    # Each plausible bug must move the outputs clearly.
    def moved(flags, key):
        with torch.no_grad():
            o = model(ids, types, mask, labels, nsp_labels, flags)
        return (o[key] - out[key]).abs().max().item()

    for setup, key in [("no_token_types", "hidden"), ("no_mask", "hidden"), ("untied", "mlm_logits"), ("no_pooler_tanh", "pooled")]:
        f = Flags()
        if setup == "untied":
            f.untied = 0.5 * torch.randn(params["bert.embeddings.word_embeddings.weight"].shape, generator=gen)
        else:
            setattr(f, setup, True)
        d = moved(f, key)
        print("bug %-15s moves %s by %.3g" % (setup, key, d))
        assert d > 0.05, (setup, d)
    # The padded row's real tokens depend on the mask: a missing mask moves them.
    f = Flags()
    f.no_mask = True
    with torch.no_grad():
        o = model(ids, types, mask, labels, nsp_labels, f)
    assert (o["hidden"][1, :6] - out["hidden"][1, :6]).abs().max().item() > 0.05

    os.makedirs(args.out, exist_ok=True)
    state = OrderedDict((k, v.detach().clone()) for k, v in model.state_dict().items())
    write_safetensors(os.path.join(args.out, "model.safetensors"), state, {"format": "pt"})
    with open(os.path.join(args.out, "config.json"), "w") as fh:
        json.dump(CONFIG, fh, indent=2)
        fh.write("\n")
    golden = OrderedDict()
    golden["input_ids"] = ids
    golden["token_type_ids"] = types
    golden["attention_mask"] = mask
    golden["labels"] = labels
    golden["next_sentence_label"] = nsp_labels
    for k in ["hidden", "pooled", "mlm_logits", "nsp_logits", "mlm_loss", "nsp_loss", "loss"]:
        golden[k] = out[k].detach().reshape(out[k].shape)
    for k in GRADS:
        golden["grad." + k] = params[k].grad.detach().clone()
    write_safetensors(os.path.join(args.out, "golden.safetensors"), golden, {"generator": GENERATOR})
    print("loss %.12f (mlm %.12f, nsp %.12f)" % (out["loss"].item(), out["mlm_loss"].item(), out["nsp_loss"].item()))


if __name__ == "__main__":
    main()
