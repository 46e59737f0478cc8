#!/usr/bin/env python3
"""Reference ELECTRA heads (Hugging Face modeling_electra.py, eager attention) in plain PyTorch.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/electra_reference.py [--out models/bert/testdata/electra]
    /usr/bin/python3 tools/pytorch/electra_reference.py --check DIR   # a zoo ELECTRA checkpoint of any head

No `transformers` package is available here, so this file re-implements
transformers' modeling_electra.py with the same module names, on the
encoder layers of bert_reference.py (ElectraLayer is BertLayer):

    class ElectraEmbeddings: word_embeddings (padding_idx), position_embeddings,
        token_type_embeddings, LayerNorm, all at embedding_size
    class ElectraModel: embeddings, embeddings_project (Linear embedding_size →
        hidden_size, as embedding_size != hidden_size), encoder; no pooler
    class ElectraDiscriminatorPredictions: dense, hidden_act, dense_prediction → squeeze(-1)
    class ElectraGeneratorPredictions: dense (hidden → embedding_size), gelu, LayerNorm
    class ElectraClassificationHead: dropout, dense, gelu, dropout, out_proj on [CLS]
        (bert_common.ClassificationHead)
    ElectraForPreTraining (discriminator_predictions; its loss BCEWithLogits over
        the attention mask), ElectraForMaskedLM (generator_predictions,
        generator_lm_head tied to the word embeddings, with its bias),
    ElectraForSequenceClassification, ElectraForTokenClassification,
    ElectraForQuestionAnswering

For each head it writes DIR/<head>/config.json and model.safetensors as
save_pretrained lays them out (the tied generator_lm_head.weight left out,
no buffers) and golden.safetensors: the inputs, the logits, the loss (a
fixed random weighting of the logits, sum(logits * r), r ~ N(0, 0.25²))
and the gradients of every parameter, in float64. The discriminator's
golden also holds labels (1 replaced, 0 original), transformers' BCE loss
over the attention mask ("bce") and its gradient with respect to the
logits ("grad_bce.logits").

With --check DIR it loads a checkpoint zoo saved into the class its
config.json names with load_state_dict(strict=True)
(generator_lm_head.weight filled from the word embeddings, as tie_weights
does), which fails on a missing or an unexpected key.
"""

import argparse
import os
import sys
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import BertEncoder  # noqa: E402
from bert_common import LABELS, TAGS, ClassificationHead, check_bugs, head_config, load_strict, output_weights, randomise_weights, shapes, weighted_loss, write_head  # noqa: E402

GENERATOR = "tools/pytorch/electra_reference.py"

# A tiny ELECTRA with embedding_size (8) ≠ hidden_size (16), so that
# embeddings_project and the generator's narrow LayerNorm are exercised.
CONFIG = OrderedDict(
    model_type="electra",
    vocab_size=24, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
    intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0, max_position_embeddings=12, type_vocab_size=2,
    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
    position_embedding_type="absolute", use_cache=True, classifier_dropout=None,
    summary_type="first", summary_use_proj=True, summary_activation="gelu", summary_last_dropout=0.1,
)


class Flags:
    """Deliberate bugs, each off by default, to check the fixture catches them."""
    no_mask = False
    no_project = False  # the embeddings used as they are, zero-padded to hidden_size
    tanh_classifier = False  # RoBERTa's tanh for ELECTRA's gelu


class ElectraEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        e = c["embedding_size"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], e, padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], e)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], e)
        self.LayerNorm = nn.LayerNorm(e, eps=c["layer_norm_eps"])

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])[None].expand_as(ids)
        types = torch.zeros_like(ids)
        x = self.word_embeddings(ids) + self.token_type_embeddings(types)
        return self.LayerNorm(x + self.position_embeddings(pos))


class ElectraModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = ElectraEmbeddings(c)
        if c["embedding_size"] != c["hidden_size"]:
            self.embeddings_project = nn.Linear(c["embedding_size"], c["hidden_size"])
        self.encoder = BertEncoder(c)  # ElectraEncoder: the same layers and names
        self.d = c["hidden_size"]

    def forward(self, ids, mask, flags):
        ext = None
        if not flags.no_mask:
            ext = (1.0 - mask[:, None, None, :].to(torch.float64)) * torch.finfo(torch.float64).min
        x = self.embeddings(ids)
        if flags.no_project:
            x = F.pad(x, (0, self.d - x.shape[-1]))
        elif hasattr(self, "embeddings_project"):
            x = self.embeddings_project(x)
        return self.encoder(x, ext)


def activation(name):
    return {"gelu": F.gelu, "relu": F.relu, "tanh": torch.tanh}[name]


class ElectraDiscriminatorPredictions(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.activation = activation(c["hidden_act"])
        self.dense_prediction = nn.Linear(c["hidden_size"], 1)

    def forward(self, h):
        return self.dense_prediction(self.activation(self.dense(h))).squeeze(-1)


class ElectraGeneratorPredictions(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.LayerNorm = nn.LayerNorm(c["embedding_size"], eps=c["layer_norm_eps"])
        self.dense = nn.Linear(c["hidden_size"], c["embedding_size"])

    def forward(self, h):
        return self.LayerNorm(F.gelu(self.dense(h)))


def classifier_act(x, flags):
    """ElectraClassificationHead's gelu (the bug tanh_classifier puts BERT's tanh instead)."""
    return torch.tanh(x) if flags.tanh_classifier else F.gelu(x)


class ElectraForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.electra = ElectraModel(c)
        self.discriminator_predictions = ElectraDiscriminatorPredictions(c)

    def forward(self, ids, mask, flags=Flags()):
        return {"logits": self.discriminator_predictions(self.electra(ids, mask, flags))}


def electra_bce(logits, labels, mask):
    """ElectraForPreTraining's loss: BCEWithLogitsLoss over the tokens of the attention mask."""
    active = mask.view(-1, logits.shape[1]) == 1
    return nn.BCEWithLogitsLoss()(logits.view(-1, logits.shape[1])[active], labels[active].float())


class ElectraForMaskedLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.electra = ElectraModel(c)
        self.generator_predictions = ElectraGeneratorPredictions(c)
        self.generator_lm_head = nn.Linear(c["embedding_size"], c["vocab_size"])
        self.generator_lm_head.weight = self.electra.embeddings.word_embeddings.weight  # tie_weights

    def forward(self, ids, mask, flags=Flags()):
        return {"logits": self.generator_lm_head(self.generator_predictions(self.electra(ids, mask, flags)))}


class ElectraForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.electra = ElectraModel(c)
        self.classifier = ClassificationHead(c, classifier_act)  # ElectraClassificationHead

    def forward(self, ids, mask, flags=Flags()):
        return {"logits": self.classifier(self.electra(ids, mask, flags), flags)}


class ElectraForTokenClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.electra = ElectraModel(c)
        p = c["classifier_dropout"] if c["classifier_dropout"] is not None else c["hidden_dropout_prob"]
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(c["hidden_size"], len(c["id2label"]))

    def forward(self, ids, mask, flags=Flags()):
        return {"logits": self.classifier(self.dropout(self.electra(ids, mask, flags)))}


class ElectraForQuestionAnswering(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.electra = ElectraModel(c)
        self.qa_outputs = nn.Linear(c["hidden_size"], 2)

    def forward(self, ids, mask, flags=Flags()):
        start, end = self.qa_outputs(self.electra(ids, mask, flags)).split(1, dim=-1)
        return {"start_logits": start.squeeze(-1), "end_logits": end.squeeze(-1)}


HEADS = OrderedDict([
    ("pre", ("ElectraForPreTraining", ElectraForPreTraining, {})),
    ("mlm", ("ElectraForMaskedLM", ElectraForMaskedLM, {})),
    ("seq", ("ElectraForSequenceClassification", ElectraForSequenceClassification, LABELS)),
    ("token", ("ElectraForTokenClassification", ElectraForTokenClassification, TAGS)),
    ("qa", ("ElectraForQuestionAnswering", ElectraForQuestionAnswering, {})),
])
TIED = {"generator_lm_head.weight": "electra.embeddings.word_embeddings.weight"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/bert/testdata/electra")
    ap.add_argument("--check", help="a zoo checkpoint directory to load strictly instead")
    args = ap.parse_args()
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
        gen = torch.Generator().manual_seed(8642)
        model = cls(c)
        randomise_weights(model, gen, pad, ["electra.embeddings.word_embeddings.weight"])
        model.eval()
        keys = [k for k in model.state_dict() if k not in TIED]
        assert not any(".pooler." in k for k in keys), keys
        out = model(ids, mask)
        rs = output_weights(out, ids, mask)
        loss = weighted_loss(out, rs)
        golden = OrderedDict(input_ids=ids, attention_mask=mask)
        if head == "pre":
            labels = torch.tensor([[0, 1, 0, 0, 1, 0, 0, 1], [0, 0, 1, 0, 0, 0, 0, 0]])
            x = out["logits"].detach().clone().requires_grad_(True)
            bce = electra_bce(x, labels, mask)
            bce.backward()
            golden["labels"] = labels
            golden["bce"] = bce.detach().reshape(())
            golden["grad_bce.logits"] = x.grad.detach().clone()
        bugs = ["no_mask", "no_project"] + (["tanh_classifier"] if head == "seq" else [])
        check_bugs(head, out, rs, lambda f: model(ids, mask, f), bugs, Flags)
        write_head(os.path.join(args.out, head), model, c, golden, out, GENERATOR, rs, loss, TIED)
        print("%s: %d tensors, outputs %s" % (arch, len(keys), shapes(out)))


if __name__ == "__main__":
    main()
