#!/usr/bin/env python3
"""Reference ALBERT heads (Hugging Face modeling_albert.py, eager attention) in plain PyTorch.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/albert_reference.py [--out models/bert/testdata/albert]
    /usr/bin/python3 tools/pytorch/albert_reference.py --check DIR   # a zoo ALBERT checkpoint of any head

No `transformers` package is available here, so this file re-implements
transformers' modeling_albert.py with the same module names:

    class AlbertEmbeddings: word_embeddings (padding_idx), position_embeddings,
        token_type_embeddings, all embedding_size wide; LayerNorm(embedding_size, layer_norm_eps)
    class AlbertAttention: query, key, value, dense, LayerNorm; scores / sqrt(head size)
        + (1 - mask) * finfo.min, softmax; LayerNorm(x + dense(context))
    class AlbertLayer: attention, ffn, activation (hidden_act), ffn_output,
        full_layer_layer_norm(ffn_output + attention output); no dropout after ffn_output
    class AlbertLayerGroup: albert_layers.I (inner_group_num of them)
    class AlbertTransformer: embedding_hidden_mapping_in (embedding_size -> hidden_size),
        albert_layer_groups.G; layer i of num_hidden_layers runs group
        int(i / (num_hidden_layers / num_hidden_groups))
    class AlbertModel: embeddings, encoder, pooler (Linear) + tanh, when add_pooling_layer
    AlbertMLMHead (predictions): dense (hidden -> embedding), activation, LayerNorm
        (embedding_size, layer_norm_eps as in current transformers), decoder (tied to the
        word embeddings; its bias is predictions.bias)
    AlbertSOPHead (sop_classifier): dropout (classifier_dropout_prob), classifier
    AlbertForPreTraining: albert, predictions, sop_classifier
    AlbertForMaskedLM: albert (no pooler), predictions
    AlbertForSequenceClassification: albert, dropout, classifier on the pooled output
    AlbertForTokenClassification: albert (no pooler), dropout, classifier
    AlbertForQuestionAnswering: albert (no pooler), qa_outputs

Two configurations, each with every head: "g1" (3 layers sharing one group
of one layer, as every published ALBERT) and "g2i2" (4 layers, 2 groups of
2 inner layers: layers 0-1 run group 0, 2-3 group 1, each its two layers).
For each it writes DIR/<config>/<head>/config.json and model.safetensors as
save_pretrained lays them out (the tied predictions.decoder.weight and
.bias left out, no position_ids buffer) and golden.safetensors: the
inputs, the outputs, the loss (a fixed random weighting of the outputs,
sum(out * r), r ~ N(0, 0.25²)) and the gradient of every parameter, in
float64. Each plausible bug (no padding mask; layer i running group
i % num_hidden_groups, where there are several) must move the outputs by
more than 0.05.

With --check DIR it loads a checkpoint zoo saved into the class its
config.json names with load_state_dict(strict=True) (the tied decoder
filled from the word embeddings and predictions.bias), which fails on a
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

GENERATOR = "tools/pytorch/albert_reference.py"

# A tiny ALBERT under AlbertConfig's names.
BASE = OrderedDict(
    model_type="albert",
    vocab_size=24, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=1,
    num_attention_heads=4, intermediate_size=32, inner_group_num=1, hidden_act="gelu_new",
    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=12,
    type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12, classifier_dropout_prob=0.0,
    position_embedding_type="absolute", pad_token_id=0, bos_token_id=2, eos_token_id=3,
)
CONFIGS = OrderedDict([
    ("g1", {}),
    ("g2i2", {"num_hidden_layers": 4, "num_hidden_groups": 2, "inner_group_num": 2}),
])


class Flags:
    """Deliberate bugs, each off by default, to check the fixture catches them."""
    no_mask = False
    group_mod = False  # layer i runs group i % num_hidden_groups


def act(c, x):
    if c["hidden_act"] == "gelu_new":
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if c["hidden_act"] == "gelu":
        return F.gelu(x)
    return F.relu(x)


class AlbertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        e = c["embedding_size"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], e, padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], e)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], e)
        self.LayerNorm = nn.LayerNorm(e, eps=c["layer_norm_eps"])

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1])[None].expand_as(ids)
        x = self.word_embeddings(ids) + self.token_type_embeddings(types) + self.position_embeddings(pos)
        return self.LayerNorm(x)


class AlbertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.n, self.dh = c["num_attention_heads"], h // c["num_attention_heads"]
        self.query = nn.Linear(h, h)
        self.key = nn.Linear(h, h)
        self.value = nn.Linear(h, h)
        self.dense = nn.Linear(h, h)
        self.LayerNorm = nn.LayerNorm(h, eps=c["layer_norm_eps"])

    def forward(self, x, ext):
        b, t, _ = x.shape

        def split(y):
            return y.view(b, t, self.n, self.dh).permute(0, 2, 1, 3)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
        if ext is not None:
            scores = scores + ext
        p = F.softmax(scores, dim=-1)
        ctx = torch.matmul(p, v).transpose(2, 1).flatten(2)
        return self.LayerNorm(x + self.dense(ctx))


class AlbertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        h = c["hidden_size"]
        self.full_layer_layer_norm = nn.LayerNorm(h, eps=c["layer_norm_eps"])
        self.attention = AlbertAttention(c)
        self.ffn = nn.Linear(h, c["intermediate_size"])
        self.ffn_output = nn.Linear(c["intermediate_size"], h)

    def forward(self, x, ext):
        a = self.attention(x, ext)
        return self.full_layer_layer_norm(self.ffn_output(act(self.c, self.ffn(a))) + a)


class AlbertLayerGroup(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.albert_layers = nn.ModuleList([AlbertLayer(c) for _ in range(c["inner_group_num"])])

    def forward(self, x, ext):
        for layer in self.albert_layers:
            x = layer(x, ext)
        return x


class AlbertTransformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embedding_hidden_mapping_in = nn.Linear(c["embedding_size"], c["hidden_size"])
        self.albert_layer_groups = nn.ModuleList([AlbertLayerGroup(c) for _ in range(c["num_hidden_groups"])])

    def forward(self, x, ext, flags):
        x = self.embedding_hidden_mapping_in(x)
        L, G = self.c["num_hidden_layers"], self.c["num_hidden_groups"]
        for i in range(L):
            g = i % G if flags.group_mod else int(i / (L / G))
            x = self.albert_layer_groups[g](x, ext)
        return x


class AlbertModel(nn.Module):
    def __init__(self, c, add_pooling_layer=True):
        super().__init__()
        self.embeddings = AlbertEmbeddings(c)
        self.encoder = AlbertTransformer(c)
        self.pooler = nn.Linear(c["hidden_size"], c["hidden_size"]) if add_pooling_layer else None

    def forward(self, ids, mask, types, flags):
        ext = None
        if not flags.no_mask:
            ext = (1.0 - mask[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
        h = self.encoder(self.embeddings(ids, types), ext, flags)
        pooled = torch.tanh(self.pooler(h[:, 0])) if self.pooler is not None else None
        return h, pooled


class AlbertMLMHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.LayerNorm = nn.LayerNorm(c["embedding_size"], eps=c["layer_norm_eps"])
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.dense = nn.Linear(c["hidden_size"], c["embedding_size"])
        self.decoder = nn.Linear(c["embedding_size"], c["vocab_size"])
        self.decoder.bias = self.bias

    def forward(self, h, flags):
        return self.decoder(self.LayerNorm(act(self.c, self.dense(h))))


class AlbertSOPHead(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dropout = nn.Dropout(c["classifier_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], 2)

    def forward(self, pooled):
        return self.classifier(self.dropout(pooled))


class AlbertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.albert = AlbertModel(c)
        self.predictions = AlbertMLMHead(c)
        self.sop_classifier = AlbertSOPHead(c)
        self.predictions.decoder.weight = self.albert.embeddings.word_embeddings.weight  # tie_weights

    def forward(self, ids, mask, types, flags=Flags()):
        h, pooled = self.albert(ids, mask, types, flags)
        return {"prediction_logits": self.predictions(h, flags), "sop_logits": self.sop_classifier(pooled)}


class AlbertForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.albert = AlbertModel(c, add_pooling_layer=False)
        self.predictions = AlbertMLMHead(c)
        self.predictions.decoder.weight = self.albert.embeddings.word_embeddings.weight

    def forward(self, ids, mask, types, flags=Flags()):
        h, _ = self.albert(ids, mask, types, flags)
        return {"logits": self.predictions(h, flags)}


class AlbertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.albert = AlbertModel(c)
        self.dropout = nn.Dropout(c["classifier_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, ids, mask, types, flags=Flags()):
        _, pooled = self.albert(ids, mask, types, flags)
        return {"logits": self.classifier(self.dropout(pooled))}


class AlbertForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.albert = AlbertModel(c, add_pooling_layer=False)
        self.dropout = nn.Dropout(c["classifier_dropout_prob"])
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, ids, mask, types, flags=Flags()):
        h, _ = self.albert(ids, mask, types, flags)
        return {"logits": self.classifier(self.dropout(h))}


class AlbertForQuestionAnswering(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.albert = AlbertModel(c, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(c["hidden_size"], 2)

    def forward(self, ids, mask, types, flags=Flags()):
        h, _ = self.albert(ids, mask, types, flags)
        start, end = self.qa_outputs(h).split(1, dim=-1)
        return {"start_logits": start.squeeze(-1), "end_logits": end.squeeze(-1)}


HEADS = OrderedDict([
    ("pretrain", ("AlbertForPreTraining", AlbertForPreTraining, {})),
    ("mlm", ("AlbertForMaskedLM", AlbertForMaskedLM, {})),
    ("seq", ("AlbertForSequenceClassification", AlbertForSequenceClassification, LABELS)),
    ("token", ("AlbertForTokenClassification", AlbertForTokenClassification, TAGS)),
    ("qa", ("AlbertForQuestionAnswering", AlbertForQuestionAnswering, {})),
])
TIED = OrderedDict([("predictions.decoder.weight", "albert.embeddings.word_embeddings.weight"), ("predictions.decoder.bias", "predictions.bias")])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/bert/testdata/albert")
    ap.add_argument("--check", help="a zoo checkpoint directory to load strictly instead")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    if args.check:
        load_strict(args.check, HEADS, TIED)
        return
    pad = BASE["pad_token_id"]
    # [CLS] a a [SEP] b b [SEP], and a shorter row padded with <pad> (0).
    ids = torch.tensor([[1, 5, 9, 3, 7, 13, 3, 17], [1, 6, 3, 8, 3, 0, 0, 0]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0]])
    mask = ids.ne(pad).long()
    for name in CONFIGS:
        base = OrderedDict(BASE)
        base.update(CONFIGS[name])
        for head, (arch, cls, _) in HEADS.items():
            c = head_config(base, HEADS, head)
            gen = torch.Generator().manual_seed(1357)
            model = cls(c)
            randomise_weights(model, gen, pad, ["albert.embeddings.word_embeddings.weight"], norms=("norm.weight", "LayerNorm.weight"))
            model.eval()
            out = model(ids, mask, types)
            rs = output_weights(out, ids, mask)
            loss = weighted_loss(out, rs)
            bugs = ["no_mask"] + (["group_mod"] if c["num_hidden_groups"] > 1 else [])
            check_bugs("%s/%s" % (name, head), out, rs, lambda f: model(ids, mask, types, f), bugs, Flags, what="outputs")
            golden = OrderedDict(input_ids=ids, token_type_ids=types, attention_mask=mask)
            state = write_head(os.path.join(args.out, name, head), model, c, golden, out, GENERATOR, rs, loss, TIED)
            print("%s/%s: %d tensors, outputs %s" % (name, arch, len(state), shapes(out)))

if __name__ == "__main__":
    main()
