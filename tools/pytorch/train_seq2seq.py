#!/usr/bin/env python3
"""PyTorch reference for `zoo finetune seq2seq`: trains the same Marian
Transformer on the same token ids with the same recipe, decodes the test set
greedily and with beam search as the zoo does, and scores it with the zoo's
BLEU and chrF, so that BLEU and training time can be compared with a zoo run.

    # a zoo run that exports its ids (RUN/ids/{train,valid,test}.jsonl)
    zoo finetune seq2seq --config C.json --data train.tsv --test-data test.tsv --export-ids --run RUN

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \\
    OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
    /usr/bin/python3 tools/pytorch/train_seq2seq.py --ids RUN/ids --config C.json \\
        --tokenizer RUN/checkpoints/final/tokenizer.json --test-tsv test.tsv \\
        [--steps N --batch B --warmup W --lr-factor F ...] --out result.json --hyps-prefix out/hyps

    # the zoo's trained weights in this model: validation loss and greedy outputs
    /usr/bin/python3 tools/pytorch/train_seq2seq.py --check-checkpoint RUN/checkpoints/final \\
        --test-tsv test.tsv [--zoo ./zoo] [--check-n 50]

--config is the zoo's run config (the JSON given to `zoo finetune seq2seq
--config`: the recipe and a "model" section) or a checkpoint's config.json
(the model only; give the recipe with --run-config or flags). Settings are
resolved as the zoo resolves them: finetune.DefaultTranslation(), then the
run config, then every flag that is given (zero included). A run config's
model is read over seq2seq.Small() and its vocabulary sizes and special ids
come from the tokenizer (vocab_size = largest id + 1; pad 0, start 1, eos 2),
as pretrain.SetupSeq2SeqContext does.

What is the same as the zoo (models/seq2seq, layers, train, decode, finetune):

Model (models/seq2seq/model.go; Hugging Face MarianMTModel's module names,
so state-dict keys are checkpoint keys)
  * post-norm encoder and decoder layers, x = LN(x + dropout(f(x))); self-
    attention, cross-attention (decoder), fc1 -> activation -> activation
    dropout -> fc2; LayerNorm eps from config (1e-5); attention scales q by
    head_dim^-0.5, masks with an additive finfo.min, dropout on the
    probabilities (attention_dropout);
  * embeddings: E[ids] * sqrt(d_model) (scale_embedding) + the sinusoidal
    table (Marian's layout, all sines then all cosines, positions from 0;
    "sinusoidal_layout": "interleaved" for the paper's), then dropout;
  * shared source/target table (share_encoder_decoder_embeddings), output
    projection tied to it (tie_word_embeddings), plus final_logits_bias, a
    buffer that is never trained;
  * init as seq2seq.New (fairseq's): Xavier-uniform for every matrix,
    zero biases, LayerNorm (1, 0), embedding tables N(0, 1/d_model), from
    torch.manual_seed(seed) (the zoo's own generator cannot be reproduced).
Batches (models/seq2seq/batch.go, pretrain/seq2seq_data.go; datasets/buckets.go)
  * src = ids + [eos]; decoder input = [decoder_start] + tgt; labels =
    tgt + [eos], -100 on padding; the decoder's key mask is tgt_in != pad
    with position 0 always on; sources mask their padding in self- and
    cross-attention;
  * each pair goes to the bucket of the smallest of DefaultBounds(max_len)
    (8, 12, 16, 24, 32, 48, 64, ... up to max_len) that holds its longer side
    (tokens + 1); every epoch each bucket's pairs are shuffled and cut into
    batches of batch_size (only a bucket's last batch is short) and all the
    epoch's batches are shuffled: the same batches per epoch and the same
    number of pairs per step, but random.Random(seed) draws another order
    than the zoo's PCG.
  * --pad-to bucket (default) pads as the zoo does: lengths to the bucket
    bound and rows to batch_size (the zoo compiles one graph per shape);
    --pad-to longest pads each batch to its longest pair and keeps only its
    pairs, as a PyTorch user would. The loss is the same either way.
Loss and optimizer (layers/loss.go, train/engine.go, adamw.go, schedule.go)
  * F.cross_entropy(ignore_index=-100, label_smoothing=label_smoothing), the
    mean over a batch's target tokens (the zoo's CrossEntropy is torch's);
    validation loss = the same smoothed loss summed over all valid.jsonl
    targets / their count, in eval mode, at every eval_interval steps and
    after the last;
  * torch.optim.AdamW(betas (adam_beta1, adam_beta2), eps adam_epsilon,
    weight_decay on matrices except the embedding tables, 0 on biases,
    LayerNorms and the tables); lr of step s (0-based) = lr_factor *
    d_model^-0.5 * min(n^-0.5, n * warmup^-1.5) with n = s + 1 (train.Noam);
    clip_grad_norm_(clip_norm) when clip_norm > 0.
Decoding (decode/beam.go, decode/sample.go, models/seq2seq/translate.go)
  * sources are test.jsonl's ids (the zoo's encoding, truncated to max_len-1)
    + eos, decoded in batches of 64 sorted by length; at most max_len tokens,
    eos included, through a KV cache;
  * greedy: argmax (first index on ties) until eos;
  * beam: each step scores every extension of every live beam by log P (in
    float64, log-softmax of the float32 logits), keeps the 2*beam best (ties
    to the smaller beam, then token); an eos candidate finishes a hypothesis
    only if it ranks below beam, the others become the next beams; score =
    log P / ((5 + |y|) / 6)^alpha with |y| counting eos; a source is done
    when it has beam finished hypotheses and then, by early_stopping, at once
    ("true"), when its best open beam scored at its current length no longer
    beats the beam-th best finished one ("false"), or when it could not at
    max_len either ("never"); at max_len the open beams join the finished.
  * outputs are detokenized with tokenizer.json (seq2seq_common.py) and
    trimmed; BLEU and chrF are finetune's, on the first score_size test pairs
    of --test-tsv (references from the TSV, as the zoo scores them).

Written: --out JSON (the resolved config, parameters, train_seconds = the
sum of the steps' wall times (batch making, forward, backward, clipping,
update; evaluation is eval_seconds), target tokens/s, the validation curve,
peak RSS (VmHWM, MB of 10^6 bytes), and per strategy BLEU, chrF and decoding
seconds) and PREFIX.greedy.txt / PREFIX.beam.txt, one hypothesis per line
(score them with `seq2seq_common.py --hyps F --tsv test.tsv --limit N`).
When the ids sit in a zoo run directory, the zoo run's own numbers (from
results.json and metrics.jsonl) are copied beside them; note that the zoo's
results.json train_seconds also counts graph compilation, evaluation and
checkpoints, and that metrics.jsonl's summed step seconds are what compares
with train_seconds here. --metrics writes per-step records in the zoo's
metrics.jsonl format. --save-checkpoint DIR writes the trained weights as
the zoo and transformers store a Marian model (config.json, model.safetensors,
tokenizer.json), so that `zoo eval --checkpoint DIR` decodes them too.

--check-checkpoint DIR loads a zoo checkpoint strictly into this model and
  * compares its logits on the first validation batch with
    marian_reference.py's MarianMTModel (float64) loading the same directory;
  * computes the validation loss of valid.jsonl (DIR/../../ids unless --ids)
    in float32 and float64 and prints it beside results.json's val_loss;
  * decodes the first --check-n (50) test sources greedily and prints them
    (and writes PREFIX.check-src.txt, PREFIX.check-greedy.txt); with --zoo
    BIN it runs `BIN translate --greedy` (and beam search) on the same
    sources and counts equal outputs.
"""

import argparse
import bisect
import copy
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import seq2seq_common as common  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402

GENERATOR = "tools/pytorch/train_seq2seq.py"
IGNORE = -100

# --------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------

# finetune.DefaultTranslation(): the recipe's defaults, under the run
# config's JSON names.
RECIPE_DEFAULTS = OrderedDict([
    ("batch_size", 64), ("max_steps", 10000), ("warmup_steps", 4000), ("lr_factor", 1.0),
    ("lr_scheduler", "noam"), ("learning_rate", 0.0), ("min_lr", 0.0),
    ("adam_beta1", 0.9), ("adam_beta2", 0.98), ("adam_epsilon", 1e-9), ("weight_decay", 0.0),
    ("label_smoothing", 0.1), ("clip_norm", 0.0), ("eval_interval", 500), ("seed", 1),
    ("num_beams", 4), ("length_penalty", 0.6), ("early_stopping", "true"), ("score_size", 1000),
])

# seq2seq.Small() under Marian's names: what a run config's "model" is read over.
SMALL_MODEL = OrderedDict([
    ("d_model", 256), ("encoder_attention_heads", 4), ("decoder_attention_heads", 4),
    ("encoder_ffn_dim", 1024), ("decoder_ffn_dim", 1024), ("encoder_layers", 3), ("decoder_layers", 3),
    ("dropout", 0.1), ("attention_dropout", 0.0), ("activation_dropout", 0.0),
    ("max_position_embeddings", 64), ("vocab_size", 8000), ("decoder_vocab_size", 8000),
    ("share_encoder_decoder_embeddings", True), ("tie_word_embeddings", True),
    ("activation_function", "relu"), ("layer_norm_eps", 1e-5), ("pad_token_id", 0),
    ("decoder_start_token_id", 1), ("eos_token_id", 2), ("scale_embedding", True),
    ("sinusoidal_layout", "concat"),
])

# seq2seq's marianDefaults(): a checkpoint config.json's missing fields.
MARIAN_DEFAULTS = OrderedDict([
    ("d_model", 1024), ("encoder_attention_heads", 16), ("decoder_attention_heads", 16),
    ("encoder_ffn_dim", 4096), ("decoder_ffn_dim", 4096), ("encoder_layers", 12), ("decoder_layers", 12),
    ("dropout", 0.1), ("attention_dropout", 0.0), ("activation_dropout", 0.0),
    ("max_position_embeddings", 1024), ("vocab_size", 58101), ("decoder_vocab_size", None),
    ("share_encoder_decoder_embeddings", True), ("tie_word_embeddings", True),
    ("activation_function", "gelu"), ("layer_norm_eps", 1e-5), ("pad_token_id", 58100),
    ("decoder_start_token_id", 58100), ("eos_token_id", 0), ("scale_embedding", False),
    ("sinusoidal_layout", "concat"),
])

LEGACY_NAMES = ("num_heads", "d_ff", "max_len", "num_encoder_layers", "src_vocab_size")


def model_config(raw, base):
    """Marian fields of raw over base (decoder_vocab_size defaults to
    vocab_size), checked as seq2seq.Config.Validate would."""
    if raw.get("model_type", "marian") != "marian" or any(k in raw for k in LEGACY_NAMES):
        raise ValueError("model config: only model_type \"marian\" with Marian's field names is read here")
    if raw.get("normalize_before") or raw.get("add_final_layer_norm"):
        raise ValueError("model config: pre-norm (normalize_before) is not implemented here; "
                         "the zoo's Marian is post-norm")
    c = OrderedDict(base)
    for k in c:
        if k in raw and raw[k] is not None:
            c[k] = raw[k]
    if raw.get("decoder_vocab_size") is None and "vocab_size" in raw:
        c["decoder_vocab_size"] = c["vocab_size"]
    if c["decoder_vocab_size"] is None:
        c["decoder_vocab_size"] = c["vocab_size"]
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if c[a] != c[b]:
            raise ValueError("model config: %s %d and %s %d must be equal" % (a, c[a], b, c[b]))
    if c["d_model"] % c["encoder_attention_heads"]:
        raise ValueError("model config: d_model %d is not divisible by the heads" % c["d_model"])
    if c["share_encoder_decoder_embeddings"] and c["vocab_size"] != c["decoder_vocab_size"]:
        raise ValueError("model config: a shared table needs vocab_size == decoder_vocab_size")
    if c["activation_function"] not in ACT2FN:
        raise ValueError("model config: activation_function %r" % c["activation_function"])
    if c["sinusoidal_layout"] not in ("concat", "interleaved"):
        raise ValueError("model config: sinusoidal_layout %r" % c["sinusoidal_layout"])
    return c


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f, object_pairs_hook=OrderedDict)


def is_run_config(d):
    return "model" in d or any(k in d for k in RECIPE_DEFAULTS)


def resolve(args, tok):
    """(model config, recipe, init_from) from --config / --run-config /
    flags. A run config's init_from (or --init-from) is a checkpoint whose
    weights training starts from and whose config.json is the model, as in
    pretrain.SetupSeq2SeqContext."""
    cfg = load_json(args.config)
    run = None
    if is_run_config(cfg):
        run = cfg
    elif args.run_config:
        run = load_json(args.run_config)
    init_from = args.init_from or (run or {}).get("init_from") or None
    if init_from:
        model = model_config(load_json(os.path.join(init_from, "config.json")), MARIAN_DEFAULTS)
    elif run is cfg:
        model = model_config(cfg.get("model", {}), SMALL_MODEL)
        v = tok.vocab_size  # pretrain.SetupSeq2SeqContext: the tokenizer's size and ids
        model.update(vocab_size=v, decoder_vocab_size=v, pad_token_id=0, decoder_start_token_id=1, eos_token_id=2)
    else:
        model = model_config(cfg, MARIAN_DEFAULTS)
    if model["vocab_size"] != tok.vocab_size or model["decoder_vocab_size"] != tok.vocab_size:
        raise ValueError("the tokenizer has %d tokens, the model's vocabularies %d and %d" % (
            tok.vocab_size, model["vocab_size"], model["decoder_vocab_size"]))
    if run is not None and run.get("gradient_accumulation_steps", 1) != 1:
        raise ValueError("gradient_accumulation_steps %r: this reference takes one batch a step; "
                         "give the zoo run's batch_size times its accumulation instead" % run["gradient_accumulation_steps"])
    recipe = OrderedDict(RECIPE_DEFAULTS)
    for k in recipe:
        if run is not None and k in run:
            recipe[k] = run[k]
    for flag, key in FLAG_KEYS:
        v = getattr(args, flag)
        if v is not None:  # a flag that is given wins, zero included
            recipe[key] = v
    if args.dropout is not None:
        model["dropout"] = args.dropout
    return model, check_recipe(recipe), init_from


def check_recipe(recipe):
    # decode.ParseStopping: "true", "True", "false", "False" or "never"
    stop = {"true": "true", "True": "true", "false": "false", "False": "false", "never": "never"}
    if recipe["early_stopping"] not in stop:
        raise ValueError("early_stopping %r: want true, false or never" % recipe["early_stopping"])
    recipe["early_stopping"] = stop[recipe["early_stopping"]]
    # pretrain.Seq2SeqTrainConfig.Validate: the two schedules and their settings
    if recipe["lr_scheduler"] in ("", None):
        recipe["lr_scheduler"] = "noam"
    if recipe["lr_scheduler"] not in ("noam", "cosine"):
        raise ValueError("lr_scheduler %r must be noam or cosine" % recipe["lr_scheduler"])
    if recipe["lr_scheduler"] != "cosine" and (recipe["learning_rate"] or recipe["min_lr"]):
        raise ValueError("learning_rate and min_lr set the cosine schedule; the noam schedule takes lr_factor")
    if recipe["lr_scheduler"] == "cosine" and not (0 <= recipe["min_lr"] <= recipe["learning_rate"]
                                                   and 0 <= recipe["warmup_steps"] < recipe["max_steps"]):
        raise ValueError("cosine schedule: need 0 <= min_lr <= learning_rate and warmup_steps < max_steps")
    for k in ("batch_size", "max_steps", "warmup_steps", "num_beams"):
        if recipe[k] <= 0:
            raise ValueError("%s %d must be positive" % (k, recipe[k]))
    return recipe


# --------------------------------------------------------------------------
# model (Hugging Face MarianMTModel's names; see marian_reference.py)
# --------------------------------------------------------------------------

ACT2FN = {"relu": F.relu, "gelu": F.gelu, "gelu_python": F.gelu, "swish": F.silu, "silu": F.silu,
          "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
          "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}


def sinusoidal_table(n_pos, dim, layout="concat"):
    """(n_pos, dim) float64: marian_reference.marian_table (Marian's
    MarianSinusoidalPositionalEmbedding), or the paper's interleaved one."""
    pos = torch.arange(n_pos, dtype=torch.float64).view(-1, 1)
    j = torch.arange(dim, dtype=torch.float64).view(1, -1)
    enc = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), 2 * torch.div(j, 2, rounding_mode="floor") / dim)
    out = torch.zeros(n_pos, dim, dtype=torch.float64)
    if layout == "interleaved":
        out[:, 0::2] = torch.sin(enc[:, 0::2])
        out[:, 1::2] = torch.cos(enc[:, 1::2])
        return out
    half = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out[:, :half] = torch.sin(enc[:, 0::2])
    out[:, half:] = torch.cos(enc[:, 1::2])
    return out


def additive(allowed, dtype):
    """bool mask -> 0 where allowed, finfo.min elsewhere (as transformers)."""
    return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)


class MarianAttention(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads, self.head_dim, self.dropout = heads, d // heads, dropout
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.q_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.heads, self.head_dim).transpose(1, 2)  # (B, h, T, hd)

    def project(self, m):
        """Keys and values of m (B, Tk, d), each (B, h, Tk, hd)."""
        return self.split(self.k_proj(m)), self.split(self.v_proj(m))

    def forward(self, x, mask, kv=None, past=None):
        """x (B, Tq, d); mask additive, broadcast to (B, h, Tq, Tk); kv the
        keys and values of cross-attention, else projected from x and
        appended to past. Returns (B, Tq, d) and the (k, v) attended to."""
        B, T, d = x.shape
        q = self.split(self.q_proj(x) * self.scaling)
        if kv is None:
            k, v = self.project(x)
            if past is not None:
                k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
            kv = (k, v)
        w = q @ kv[0].transpose(-1, -2)  # (B, h, Tq, Tk)
        if mask is not None:
            w = w + mask
        p = F.dropout(torch.softmax(w, -1), self.dropout, self.training)
        return self.out_proj((p @ kv[1]).transpose(1, 2).reshape(B, T, d)), kv


class MarianEncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, eps = c["d_model"], c["layer_norm_eps"]
        self.self_attn = MarianAttention(d, c["encoder_attention_heads"], c["attention_dropout"])
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=eps)
        self.fc1 = nn.Linear(d, c["encoder_ffn_dim"])
        self.fc2 = nn.Linear(c["encoder_ffn_dim"], d)
        self.final_layer_norm = nn.LayerNorm(d, eps=eps)
        self.act, self.p, self.p_act = ACT2FN[c["activation_function"]], c["dropout"], c["activation_dropout"]

    def forward(self, x, mask):
        h, _ = self.self_attn(x, mask)
        x = self.self_attn_layer_norm(x + F.dropout(h, self.p, self.training))
        h = self.fc2(F.dropout(self.act(self.fc1(x)), self.p_act, self.training))
        return self.final_layer_norm(x + F.dropout(h, self.p, self.training))


class MarianDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, eps = c["d_model"], c["layer_norm_eps"]
        self.self_attn = MarianAttention(d, c["decoder_attention_heads"], c["attention_dropout"])
        self.self_attn_layer_norm = nn.LayerNorm(d, eps=eps)
        self.encoder_attn = MarianAttention(d, c["decoder_attention_heads"], c["attention_dropout"])
        self.encoder_attn_layer_norm = nn.LayerNorm(d, eps=eps)
        self.fc1 = nn.Linear(d, c["decoder_ffn_dim"])
        self.fc2 = nn.Linear(c["decoder_ffn_dim"], d)
        self.final_layer_norm = nn.LayerNorm(d, eps=eps)
        self.act, self.p, self.p_act = ACT2FN[c["activation_function"]], c["dropout"], c["activation_dropout"]

    def forward(self, x, mask, cross_kv, mem_mask, past=None):
        h, self_kv = self.self_attn(x, mask, past=past)
        x = self.self_attn_layer_norm(x + F.dropout(h, self.p, self.training))
        h, _ = self.encoder_attn(x, mem_mask, kv=cross_kv)
        x = self.encoder_attn_layer_norm(x + F.dropout(h, self.p, self.training))
        h = self.fc2(F.dropout(self.act(self.fc1(x)), self.p_act, self.training))
        return self.final_layer_norm(x + F.dropout(h, self.p, self.training)), self_kv


class MarianStack(nn.Module):
    """model.encoder or model.decoder: embed_tokens (possibly shared) and layers."""

    def __init__(self, c, embed_tokens, layer):
        super().__init__()
        self.embed_tokens = embed_tokens
        n = c["encoder_layers"] if layer is MarianEncoderLayer else c["decoder_layers"]
        self.layers = nn.ModuleList([layer(c) for _ in range(n)])


class MarianModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        if c["share_encoder_decoder_embeddings"]:
            self.shared = nn.Embedding(c["vocab_size"], d)
            enc = dec = self.shared
        else:
            self.shared = None
            enc, dec = nn.Embedding(c["vocab_size"], d), nn.Embedding(c["decoder_vocab_size"], d)
        self.encoder = MarianStack(c, enc, MarianEncoderLayer)
        self.decoder = MarianStack(c, dec, MarianDecoderLayer)


class Seq2Seq(nn.Module):
    """MarianMTModel for training and cached decoding."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = MarianModel(c)
        v = c["decoder_vocab_size"]
        self.lm_head = None if c["tie_word_embeddings"] else nn.Linear(c["d_model"], v, bias=False)
        self.register_buffer("final_logits_bias", torch.zeros(1, v))
        self.embed_scale = math.sqrt(c["d_model"]) if c["scale_embedding"] else 1.0
        # float64, cast to the activations' dtype: not a buffer, so that a
        # float64 copy of the model gets the float64 table
        self.positions = sinusoidal_table(c["max_position_embeddings"], c["d_model"], c["sinusoidal_layout"])
        self.pad, self.eos, self.start = c["pad_token_id"], c["eos_token_id"], c["decoder_start_token_id"]

    def tables(self):
        """The embedding tables (no weight decay)."""
        m = self.model
        if m.shared is not None:
            return [m.shared.weight]
        return [m.encoder.embed_tokens.weight, m.decoder.embed_tokens.weight]

    def init_weights(self, seed):
        """seq2seq.New's init after torch.manual_seed(seed)."""
        torch.manual_seed(seed)
        tables = {id(t) for t in self.tables()}
        with torch.no_grad():
            for name, p in self.named_parameters():
                if id(p) in tables:
                    p.normal_(0.0, self.c["d_model"] ** -0.5)
                elif p.dim() == 2:
                    nn.init.xavier_uniform_(p)
                elif name.endswith(".bias") and "layer_norm" not in name:
                    p.zero_()

    def embed(self, stack, ids, offset=0):
        x = stack.embed_tokens(ids) * self.embed_scale
        x = x + self.positions[offset:offset + ids.shape[1]].to(x.dtype)
        return F.dropout(x, self.c["dropout"], self.training)

    def encode(self, src):
        """src (B, Ts) -> memory (B, Ts, d) and the additive source mask (B, 1, 1, Ts)."""
        mask = additive((src != self.pad)[:, None, None, :], self.final_logits_bias.dtype)
        x = self.embed(self.model.encoder, src)
        for layer in self.model.encoder.layers:
            x = layer(x, mask)
        return x, mask

    def cross_kv(self, memory):
        return [layer.encoder_attn.project(memory) for layer in self.model.decoder.layers]

    def head(self, h):
        w = self.model.decoder.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return F.linear(h, w) + self.final_logits_bias

    def forward(self, src, tgt_in):
        """Teacher-forced logits (B, Tt, V) of src (B, Ts) and tgt_in (B, Tt)."""
        memory, mem_mask = self.encode(src)
        T = tgt_in.shape[1]
        keys = tgt_in != self.pad
        keys[:, 0] = True  # batch.go Feed.Load: the start position is always a token
        allowed = torch.ones(T, T, dtype=torch.bool).tril()[None, None] & keys[:, None, None, :]
        mask = additive(allowed, memory.dtype)
        x = self.embed(self.model.decoder, tgt_in)
        for layer, kv in zip(self.model.decoder.layers, self.cross_kv(memory)):
            x, _ = layer(x, mask, kv, mem_mask)
        return self.head(x)

    def step(self, tokens, t, past, cross, mem_mask):
        """One cached decoder step: tokens (R, 1) at position t -> logits (R, V)
        and the new past (per layer (k, v), each (R, h, t+1, hd))."""
        x = self.embed(self.model.decoder, tokens, t)
        new = []
        for i, layer in enumerate(self.model.decoder.layers):
            x, kv = layer(x, None, cross[i], mem_mask, None if past is None else past[i])
            new.append(kv)
        return self.head(x)[:, -1], new


# --------------------------------------------------------------------------
# checkpoints in Marian's layout
# --------------------------------------------------------------------------

# Of the names one tensor has in the state dict, the one save_pretrained keeps.
KEEP_ORDER = ["model.shared.weight", "model.decoder.embed_tokens.weight", "model.encoder.embed_tokens.weight",
              "lm_head.weight"]


def name_groups(model):
    """state-dict name -> all names of the same tensor, with lm_head.weight
    an alias of the decoder's table when tied."""
    sd = model.state_dict()
    by_ptr = OrderedDict()
    for name, t in sd.items():
        by_ptr.setdefault(t.data_ptr(), []).append(name)
    groups = {n: names for names in by_ptr.values() for n in names}
    if model.lm_head is None:
        dec = groups["model.decoder.embed_tokens.weight"]
        for n in dec:
            groups[n] = dec + ["lm_head.weight"]
    return sd, groups


def saved_state_dict(model):
    """What MarianMTModel.save_pretrained writes: one name per tensor."""
    sd, groups = name_groups(model)
    out = OrderedDict()
    for name in sorted(sd):
        names = groups[name]
        keep = min(names, key=lambda n: KEEP_ORDER.index(n) if n in KEEP_ORDER else -1)
        if name == keep:
            out[name] = sd[name].detach().clone()
    return out


def load_checkpoint(model, path):
    """Strict load of a Marian model.safetensors: every tensor must be found
    under one of its names (final_logits_bias may be missing: zero), tied
    names must agree, any other key is an error; embed_positions tables are
    checked against the config's. Returns the file's keys."""
    tensors, _ = read_safetensors(path)
    sd, groups = name_groups(model)
    known = set(groups) | {"lm_head.weight"}
    unexpected, missing = [], []
    for k, t in tensors.items():
        if k.endswith("embed_positions.weight"):
            e = (t.double() - sinusoidal_table(*t.shape, model.c["sinusoidal_layout"])).abs().max().item()
            if e > 1e-3:
                raise RuntimeError("%s: %s is not the %s table (max |diff| %.3g)" % (
                    path, k, model.c["sinusoidal_layout"], e))
        elif k not in known:
            unexpected.append(k)
    new = OrderedDict()
    for name in sd:
        present = [n for n in groups[name] if n in tensors]
        for n in present[1:]:
            if not torch.equal(tensors[n], tensors[present[0]]):
                raise RuntimeError("%s: %s and %s are tied but differ" % (path, present[0], n))
        if present:
            new[name] = tensors[present[0]]
        elif name == "final_logits_bias":
            new[name] = torch.zeros_like(sd[name])
        else:
            missing.append(name)
    if missing or unexpected:
        raise RuntimeError("%s: missing %s, unexpected %s" % (path, missing, unexpected))
    for name, t in new.items():
        if tuple(t.shape) != tuple(sd[name].shape):
            raise RuntimeError("%s: %s has shape %s, the model %s" % (path, name, list(t.shape), list(sd[name].shape)))
    model.load_state_dict(new, strict=True)
    return sorted(tensors)


def save_checkpoint(model, out_dir, tokenizer_path):
    """config.json, model.safetensors (F32, save_pretrained's keys) and
    tokenizer.json, as seq2seq.Model.Save writes them."""
    os.makedirs(out_dir, exist_ok=True)
    c = model.c
    cfg = OrderedDict([("architectures", ["MarianMTModel"]), ("model_type", "marian")])
    for k, v in c.items():
        if k == "layer_norm_eps" and v == 1e-5 or k == "sinusoidal_layout" and v == "concat":
            continue  # Marian's; the zoo writes these keys only otherwise
        if k == "tie_word_embeddings" and v:
            continue
        cfg[k] = v
    cfg["bos_token_id"], cfg["forced_eos_token_id"] = c["decoder_start_token_id"], c["eos_token_id"]
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(OrderedDict(sorted(cfg.items())), f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out_dir, "model.safetensors"),
                      OrderedDict((k, v.float()) for k, v in saved_state_dict(model).items()), {"format": "pt"})
    with open(tokenizer_path, "rb") as src, open(os.path.join(out_dir, "tokenizer.json"), "wb") as dst:
        dst.write(src.read())


# --------------------------------------------------------------------------
# data: ids, buckets, batches
# --------------------------------------------------------------------------


def read_ids(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                out.append((d["src"], d["tgt"]))
    return out


def default_bounds(max_len):
    """pretrain.Seq2SeqBounds."""
    return [b for b in (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512) if b < max_len] + [max_len]


class BucketPlan:
    """datasets.BucketPlan as seq2seq's plan uses it: one bound per pair, the
    smallest that holds its longer side with eos / start."""

    def __init__(self, examples, max_len, batch, seed):
        self.batch, self.bounds = batch, default_bounds(max_len)
        buckets = {}
        for i, (s, t) in enumerate(examples):
            n = max(len(s) + 1, len(t) + 1)
            if n > self.bounds[-1]:
                raise ValueError("pair %d has %d tokens with eos, more than max_len %d" % (i, n, self.bounds[-1]))
            buckets.setdefault(self.bounds[bisect.bisect_left(self.bounds, n)], []).append(i)
        self.buckets = sorted(buckets.items())
        self.rng = random.Random(seed)
        self.order, self.cursor, self.epoch = [], 0, 0

    def _cut(self, idx, bound):
        return [(idx[i:i + self.batch], bound) for i in range(0, len(idx), self.batch)]

    def next(self):
        if self.cursor == len(self.order):
            self.order = []
            for bound, idx in self.buckets:
                idx = list(idx)
                self.rng.shuffle(idx)
                self.order += self._cut(idx, bound)
            self.rng.shuffle(self.order)
            self.cursor, self.epoch = 0, self.epoch + 1
        self.cursor += 1
        return self.order[self.cursor - 1]

    def all(self):
        """Every batch once: buckets ascending, pairs in index order (evaluation)."""
        return [b for bound, idx in self.buckets for b in self._cut(idx, bound)]

    def num_batches(self):
        return len(self.all())


def make_batch(c, examples, idx, bound, rows, pad_to):
    """(src, tgt_in, labels, targets) as seq2seq.Config.NewBatch lays them out."""
    pairs = [examples[i] for i in idx]
    if pad_to == "bucket":
        ts = tt = bound
    else:
        rows = len(pairs)
        ts, tt = max(len(s) for s, _ in pairs) + 1, max(len(t) for _, t in pairs) + 1
    pad, eos, start = c["pad_token_id"], c["eos_token_id"], c["decoder_start_token_id"]
    src = [[pad] * ts for _ in range(rows)]
    tgt_in = [[pad] * tt for _ in range(rows)]
    labels = [[IGNORE] * tt for _ in range(rows)]
    n = 0
    for r, (s, t) in enumerate(pairs):
        src[r][:len(s) + 1] = s + [eos]
        tgt_in[r][:len(t) + 1] = [start] + t
        labels[r][:len(t) + 1] = t + [eos]
        n += len(t) + 1
    return torch.tensor(src), torch.tensor(tgt_in), torch.tensor(labels), n


def check_aligned(tok, test, pairs, limit, path):
    """test.jsonl's sources must be the TSV's, encoded: byte-level BPE is
    lossless, so each decodes back to its text unless it was truncated."""
    if len(test) != len(pairs):
        raise ValueError("test.jsonl has %d pairs but %s %d: not the run's test_data?" % (len(test), path, len(pairs)))
    for i, ((s, _), (text, _)) in enumerate(zip(test, pairs)):
        if len(s) < limit and tok.decode(s) != text:
            raise ValueError("test pair %d: test.jsonl's source reads %r, %s has %r: not the run's test_data?" % (
                i, tok.decode(s), path, text))


def check_ids(c, sets):
    special = {c["pad_token_id"], c["eos_token_id"], c["decoder_start_token_id"]}
    for name, exs in sets.items():
        for i, (s, t) in enumerate(exs):
            for side, ids, v in (("source", s, c["vocab_size"]), ("target", t, c["decoder_vocab_size"])):
                if not ids:
                    raise ValueError("%s pair %d: empty %s" % (name, i, side))
                bad = [x for x in ids if x < 0 or x >= v or x in special]
                if bad:
                    raise ValueError("%s pair %d: %s id %d is outside [0, %d) or special" % (name, i, side, bad[0], v))


# --------------------------------------------------------------------------
# training and evaluation
# --------------------------------------------------------------------------


def noam(step, d_model, warmup, factor):
    """train.Noam's LR(step), step 0-based."""
    n = max(step, 0) + 1
    return factor * (d_model ** -0.5 * min(n ** -0.5, n * warmup ** -1.5))


def warmup_cosine(step, max_lr, min_lr, warmup, decay_steps):
    """train.WarmupCosine's LR(step) (nanoGPT's get_lr), step 0-based."""
    step = max(step, 0)
    if step < warmup:
        return max_lr * (step + 1) / (warmup + 1)
    if step > decay_steps:
        return min_lr
    ratio = (step - warmup) / (decay_steps - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def lr_at(step, d_model, recipe):
    """pretrain.Seq2SeqTrainConfig's schedule: noam (default) or cosine."""
    if recipe["lr_scheduler"] == "cosine":
        return warmup_cosine(step, recipe["learning_rate"], recipe["min_lr"], recipe["warmup_steps"],
                             recipe["max_steps"])
    return noam(step, d_model, recipe["warmup_steps"], recipe["lr_factor"])


def loss_of(model, batch, smoothing, reduction="mean"):
    src, tgt_in, labels, _ = batch
    logits = model(src, tgt_in)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE,
                           label_smoothing=smoothing, reduction=reduction)


@torch.no_grad()
def validation_loss(model, batches, smoothing):
    """Σ smoothed token losses / Σ targets over the batches, in eval mode."""
    was = model.training
    model.eval()
    total, n = 0.0, 0
    for b in batches:
        total += loss_of(model, b, smoothing, "sum").double().item()
        n += b[3]
    model.train(was)
    return total / n


def status_mb(field):
    """A kB field of /proc/self/status (VmHWM, VmRSS) in MB of 10^6 bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    return None


def train(model, recipe, train_ex, valid_ex, pad_to, metrics_path, log):
    c = model.c
    plan = BucketPlan(train_ex, c["max_position_embeddings"], recipe["batch_size"], recipe["seed"])
    val_plan = BucketPlan(valid_ex, c["max_position_embeddings"], recipe["batch_size"], recipe["seed"])
    val_batches = [make_batch(c, valid_ex, idx, b, recipe["batch_size"], pad_to) for idx, b in val_plan.all()]
    tables = {id(t) for t in model.tables()}
    decay = [p for p in model.parameters() if p.dim() >= 2 and id(p) not in tables]
    no_decay = [p for p in model.parameters() if not (p.dim() >= 2 and id(p) not in tables)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": recipe["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=0.0, betas=(recipe["adam_beta1"], recipe["adam_beta2"]), eps=recipe["adam_epsilon"],
                            foreach=False)
    params = decay + no_decay
    steps, every = recipe["max_steps"], recipe["eval_interval"]
    log("%d training pairs in %d buckets, %d batches an epoch; %d validation pairs in %d batches" % (
        len(train_ex), len(plan.buckets), plan.num_batches(), len(valid_ex), len(val_batches)))
    mf = None
    if metrics_path:
        os.makedirs(os.path.dirname(os.path.abspath(metrics_path)), exist_ok=True)
        mf = open(metrics_path, "w")
    curve, train_secs, eval_secs, targets = [], 0.0, 0.0, 0
    loss = float("nan")
    model.train()
    for step in range(steps):
        began = time.perf_counter()
        idx, bound = plan.next()
        batch = make_batch(c, train_ex, idx, bound, recipe["batch_size"], pad_to)
        lr = lr_at(step, c["d_model"], recipe)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        out = loss_of(model, batch, recipe["label_smoothing"])
        out.backward()
        norm = None
        if recipe["clip_norm"] > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, recipe["clip_norm"]).item()
        opt.step()
        loss = out.item()
        secs = time.perf_counter() - began
        if not math.isfinite(loss):
            raise RuntimeError("step %d: the loss is %r" % (step + 1, loss))
        train_secs += secs
        targets += batch[3]
        rec = OrderedDict([("step", step + 1), ("loss", loss)])
        if (every > 0 and (step + 1) % every == 0) or step + 1 == steps:
            t0 = time.perf_counter()
            val = validation_loss(model, val_batches, recipe["label_smoothing"])
            eval_secs += time.perf_counter() - t0
            rec["val_loss"] = val
            curve.append(OrderedDict([("step", step + 1), ("val_loss", val), ("train_seconds", train_secs)]))
            log("step %d/%d  loss %.4f  val %.4f  lr %.2e  %.0f tok/s" % (
                step + 1, steps, loss, val, lr, targets / train_secs))
        rec.update([("lr", lr), ("targets", batch[3]), ("seconds", secs), ("targets_per_sec", batch[3] / secs)])
        if norm is not None:
            rec["grad_norm"] = norm
        if mf:
            mf.write(json.dumps(rec) + "\n")
    if mf:
        mf.close()
    return OrderedDict([
        ("steps", steps), ("epochs", plan.epoch), ("final_train_loss", loss), ("val_loss", curve[-1]["val_loss"]),
        ("train_seconds", train_secs), ("eval_seconds", eval_secs), ("targets", targets),
        ("tokens_per_sec", targets / train_secs), ("val_curve", curve)])


# --------------------------------------------------------------------------
# decoding (decode/beam.go, decode/sample.go)
# --------------------------------------------------------------------------


def source_tensor(c, srcs):
    ts = max(len(s) for s in srcs) + 1
    out = torch.full((len(srcs), ts), c["pad_token_id"], dtype=torch.long)
    for r, s in enumerate(srcs):
        out[r, :len(s) + 1] = torch.tensor(s + [c["eos_token_id"]])
    return out


@torch.no_grad()
def greedy(model, srcs, max_new):
    """Argmax decoding; outputs without start and eos."""
    c = model.c
    memory, mem_mask = model.encode(source_tensor(c, srcs))
    cross = model.cross_kv(memory)
    B = len(srcs)
    out, done = [[] for _ in range(B)], [False] * B
    last = torch.full((B, 1), c["decoder_start_token_id"], dtype=torch.long)
    past = None
    for t in range(max_new):
        logits, past = model.step(last, t, past, cross, mem_mask)
        nxt = logits.argmax(-1)
        for b, tok in enumerate(nxt.tolist()):
            if not done[b]:
                if tok == c["eos_token_id"]:
                    done[b] = True
                else:
                    out[b].append(tok)
        if all(done):
            break
        last = nxt.view(B, 1)
    return out


def length_penalty(n, alpha):
    return ((5 + n) / 6) ** alpha


def is_done(finished, best, n, k, stopping, alpha, max_new):
    """BeamConfig.done."""
    if len(finished) < k:
        return False
    if stopping == "true" or best == -math.inf:
        return True
    worst = sorted(h[1] for h in finished)[len(finished) - k]
    if stopping == "never":
        n = max_new
    return worst >= best / length_penalty(n, alpha)


@torch.no_grad()
def beam_search(model, srcs, k, alpha, stopping, max_new):
    """decode.BeamSearch over B*k rows; returns each source's best tokens."""
    c = model.c
    eos = c["eos_token_id"]
    B = len(srcs)
    R = B * k
    memory, mem_mask = model.encode(source_tensor(c, srcs))
    memory, mem_mask = memory.repeat_interleave(k, 0), mem_mask.repeat_interleave(k, 0)
    cross = model.cross_kv(memory)
    seqs = [[] for _ in range(R)]
    logp = [0.0 if r % k == 0 else -math.inf for r in range(R)]
    finished = [[] for _ in range(B)]  # (tokens, score, log P, finished)
    done = [False] * B
    last = torch.full((R,), c["decoder_start_token_id"], dtype=torch.long)
    past = None

    def hyp(tokens, lp, fin, with_eos):
        return (list(tokens), lp / length_penalty(len(tokens) + (1 if with_eos else 0), alpha), lp, fin)

    for t in range(max_new):
        if all(done):
            break
        logits, past = model.step(last.view(R, 1), t, past, cross, mem_mask)
        lg = logits.double()
        V = lg.shape[1]
        scores = torch.tensor(logp, dtype=torch.float64)[:, None] + (lg - torch.logsumexp(lg, -1, keepdim=True))
        scores = scores.view(B, k * V)
        kth = scores.topk(2 * k, dim=1).values[:, -1]
        parents = list(range(R))
        nseqs, nlogp, nlast = [None] * R, [-math.inf] * R, last.clone()
        for s in range(B):
            lo = s * k
            if done[s]:
                for r in range(lo, lo + k):
                    nseqs[r] = seqs[r]
                continue
            row = scores[s]
            thr = kth[s].item()
            pick = (row >= thr).nonzero().view(-1) if thr > -math.inf else (row > -math.inf).nonzero().view(-1)
            vals = row[pick]
            order = torch.sort(vals, descending=True, stable=True).indices[:2 * k]  # ties: smaller (beam, id)
            live = 0
            for rank, j in enumerate(order.tolist()):
                if live == k:
                    break
                flat, sc = pick[j].item(), vals[j].item()
                beam, tok = divmod(flat, V)
                parent = seqs[lo + beam]
                if tok == eos:
                    if rank < k:
                        finished[s].append(hyp(parent, sc, True, True))
                    continue
                r = lo + live
                parents[r], nlogp[r], nseqs[r], nlast[r] = lo + beam, sc, parent + [tok], tok
                live += 1
            for r in range(lo + live, lo + k):  # rows with no beam
                parents[r], nseqs[r], nlast[r] = lo, seqs[lo], last[lo]
            best = nlogp[lo] if live > 0 else -math.inf
            done[s] = is_done(finished[s], best, t + 1, k, stopping, alpha, max_new)
        idx = torch.tensor(parents)
        past = [(kk.index_select(0, idx), vv.index_select(0, idx)) for kk, vv in past]
        seqs, logp, last = nseqs, nlogp, nlast
    out = []
    for s in range(B):
        hyps = list(finished[s])
        if not done[s]:
            for r in range(s * k, (s + 1) * k):
                if logp[r] > -math.inf:
                    hyps.append(hyp(seqs[r], logp[r], False, False))
        hyps.sort(key=lambda h: -h[1])  # stable, as slices.SortStableFunc
        out.append(hyps[0][0] if hyps else [])
    return out


def translate(model, srcs, strategy, recipe, batch=64):
    """seq2seq.TranslateContext: sources sorted by length (stable), decoded
    batch at a time; returns token lists in input order."""
    c = model.c
    limit = c["max_position_embeddings"] - 1
    srcs = [s[:limit] for s in srcs]
    order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]))
    out = [None] * len(srcs)
    model.eval()
    for lo in range(0, len(order), batch):
        part = order[lo:lo + batch]
        chunk = [srcs[i] for i in part]
        if strategy == "greedy":
            toks = greedy(model, chunk, c["max_position_embeddings"])
        else:
            toks = beam_search(model, chunk, recipe["num_beams"], recipe["length_penalty"], recipe["early_stopping"],
                               c["max_position_embeddings"])
        for i, t in zip(part, toks):
            out[i] = t
    return out


def beam_name(recipe):
    return "beam %d (α %.1f, early stopping %s)" % (
        recipe["num_beams"], recipe["length_penalty"], recipe["early_stopping"])


def score(model, tok, srcs, refs, recipe, hyps_prefix, log):
    results = []
    for strategy in ("beam", "greedy"):  # the zoo's order
        t0 = time.perf_counter()
        toks = translate(model, srcs, strategy, recipe)
        secs = time.perf_counter() - t0
        hyps = [tok.text(t) for t in toks]
        b = common.corpus_bleu(hyps, refs)
        r = OrderedDict([("strategy", beam_name(recipe) if strategy == "beam" else "greedy"), ("bleu", b["score"]),
                         ("bleu_signature", b["signature"]), ("chrf", common.corpus_chrf(hyps, refs)),
                         ("seconds", secs)])
        if hyps_prefix:
            path = "%s.%s.txt" % (hyps_prefix, strategy)
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            nl = common.write_lines(path, hyps)
            r["hyps"] = path
            if nl:
                r["hyps_with_newlines"] = nl
        log("%s on %d test pairs: BLEU %.2f, chrF %.2f (%.1f s)" % (
            r["strategy"], len(refs), r["bleu"], r["chrf"], secs))
        results.append(r)
    return results


# --------------------------------------------------------------------------
# the zoo's run, for the side-by-side
# --------------------------------------------------------------------------


def zoo_run_summary(run_dir):
    """results.json and metrics.jsonl of a zoo run, when present."""
    out = OrderedDict()
    res = os.path.join(run_dir, "results.json")
    if os.path.exists(res):
        r = load_json(res)
        for k in ("steps", "val_loss", "train_seconds", "params", "train_pairs", "held_out_pairs", "test_pairs",
                  "scores"):
            if k in r:
                out[k] = r[k]
        for s in out.get("scores", []):
            s.pop("bleu_signature", None)
    met = os.path.join(run_dir, "metrics.jsonl")
    if os.path.exists(met):
        secs, targets, curve = 0.0, 0, []
        with open(met) as f:
            for line in f:
                m = json.loads(line)
                secs += m.get("seconds", 0.0)
                targets += m.get("targets", 0)
                if "val_loss" in m:
                    curve.append(OrderedDict([("step", m["step"]), ("val_loss", m["val_loss"])]))
        out["step_seconds_sum"] = secs
        out["targets"] = targets
        out["tokens_per_sec"] = targets / secs if secs else None
        out["val_curve"] = curve
    return out


# --------------------------------------------------------------------------
# --check-checkpoint
# --------------------------------------------------------------------------


def oracle_logits(ckpt_dir, src, tgt_in):
    """marian_reference.py's MarianMTModel (float64) on the same checkpoint."""
    prev = torch.get_default_dtype()
    try:
        import marian_reference as mr  # sets float64 as the default dtype
        torch.set_default_dtype(torch.float64)
        ref, keys = mr.from_pretrained(ckpt_dir)
        dmask = (tgt_in != ref.config.pad_token_id).long()
        dmask[:, 0] = 1
        with torch.no_grad():
            lg, _ = ref(src, (src != ref.config.pad_token_id).long(), tgt_in, dmask)
        return lg, keys
    finally:
        torch.set_default_dtype(prev)


def check_checkpoint(args, log):
    d = args.check_checkpoint
    run_dir = os.path.normpath(os.path.join(d, "..", ".."))
    ids = args.ids or os.path.join(run_dir, "ids")
    tok = common.ByteLevelTokenizer(args.tokenizer or os.path.join(d, "tokenizer.json"))
    c = model_config(load_json(os.path.join(d, "config.json")), MARIAN_DEFAULTS)
    recipe = OrderedDict(RECIPE_DEFAULTS)
    for p in (args.run_config, args.config):
        if p and is_run_config(load_json(p)):
            recipe.update((k, v) for k, v in load_json(p).items() if k in recipe)
    for flag, key in FLAG_KEYS:
        if getattr(args, flag) is not None:
            recipe[key] = getattr(args, flag)
    check_recipe(recipe)
    model = Seq2Seq(c)
    keys = load_checkpoint(model, os.path.join(d, "model.safetensors"))
    model.eval()
    log("strict load of %s: %d keys (%s)" % (d, len(keys), ", ".join(k for k in keys if ".layers." not in k)))
    valid = read_ids(os.path.join(ids, "valid.jsonl"))
    check_ids(c, {"valid": valid})
    plan = BucketPlan(valid, c["max_position_embeddings"], recipe["batch_size"], recipe["seed"])
    batches = [make_batch(c, valid, idx, b, recipe["batch_size"], "bucket") for idx, b in plan.all()]
    m64 = copy.deepcopy(model).double()
    with torch.no_grad():
        mine = m64(batches[0][0], batches[0][1])
    ref, _ = oracle_logits(d, batches[0][0], batches[0][1])
    valid_pos = batches[0][2] != IGNORE
    e = (mine - ref)[valid_pos].abs().max().item()
    log("logits (float64) vs marian_reference.MarianMTModel on validation batch 1 (%d targets): max |diff| %.3g" % (
        batches[0][3], e))
    eps = recipe["label_smoothing"]
    v32 = validation_loss(model, batches, eps)
    v64 = validation_loss(m64, batches, eps)
    zoo = zoo_run_summary(run_dir).get("val_loss")
    log("validation loss (label smoothing %g) on %d pairs, %d targets: PyTorch float32 %.9f, float64 %.9f" % (
        eps, len(valid), sum(b[3] for b in batches), v32, v64))
    if zoo is not None:
        log("  zoo (results.json val_loss)            %.9f   |PyTorch32 - zoo| %.2e" % (zoo, abs(v32 - zoo)))
    result = OrderedDict([("checkpoint", d), ("keys", len(keys)), ("oracle_max_abs_logit_diff", e),
                          ("val_loss_float32", v32), ("val_loss_float64", v64), ("zoo_val_loss", zoo)])
    if args.test_tsv:
        test = read_ids(os.path.join(ids, "test.jsonl"))
        pairs, _ = common.read_parallel_tsv(args.test_tsv)
        check_aligned(tok, test, pairs, c["max_position_embeddings"] - 1, args.test_tsv)
        n = min(args.check_n, len(test))
        srcs = [s for s, _ in test[:n]]
        outs = {"greedy": [tok.text(t) for t in translate(model, srcs, "greedy", recipe)],
                "beam": [tok.text(t) for t in translate(model, srcs, "beam", recipe)]}
        log("greedy outputs of the first %d test sources:" % n)
        for i, h in enumerate(outs["greedy"]):
            log("  %2d  %s  ->  %s" % (i, pairs[i][0], h))
        prefix = args.hyps_prefix or os.path.join(run_dir, "pytorch")
        os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
        src_file = prefix + ".check-src.txt"
        common.write_lines(src_file, [s for s, _ in pairs[:n]])
        for k, v in outs.items():
            common.write_lines("%s.check-%s.txt" % (prefix, k), v)
        result["check_n"] = n
        if args.zoo:
            for k, v in outs.items():
                cmd = [args.zoo, "translate", "--checkpoint", d, "--input", src_file]
                cmd += ["--greedy"] if k == "greedy" else ["--beam", str(recipe["num_beams"]), "--length-penalty",
                                                           str(recipe["length_penalty"]), "--early-stopping",
                                                           recipe["early_stopping"]]
                got = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split("\n")[:n]
                same = [i for i in range(n) if got[i] == v[i]]
                log("%s: %d of %d outputs equal zoo translate's (%s)" % (k, len(same), n, " ".join(cmd)))
                for i in range(n):
                    if got[i] != v[i]:
                        log("  %2d  zoo %r\n      pt  %r" % (i, got[i], v[i]))
                result["equal_" + k] = len(same)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2, ensure_ascii=False)
            f.write("\n")
    return 0


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

FLAG_KEYS = [("steps", "max_steps"), ("batch", "batch_size"), ("warmup", "warmup_steps"), ("lr_factor", "lr_factor"),
             ("beta1", "adam_beta1"), ("beta2", "adam_beta2"), ("adam_eps", "adam_epsilon"),
             ("weight_decay", "weight_decay"), ("label_smoothing", "label_smoothing"), ("clip_norm", "clip_norm"),
             ("eval_interval", "eval_interval"), ("seed", "seed"), ("beam", "num_beams"),
             ("length_penalty", "length_penalty"), ("early_stopping", "early_stopping"), ("score_size", "score_size")]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ids", help="RUN/ids: train.jsonl, valid.jsonl, test.jsonl")
    ap.add_argument("--config", help="the zoo run config JSON, or a checkpoint's config.json")
    ap.add_argument("--run-config", help="the recipe, when --config is a checkpoint's config.json")
    ap.add_argument("--tokenizer", help="the run's tokenizer.json")
    ap.add_argument("--test-tsv", help="the test_data TSV (references)")
    for flag, typ, what in [("steps", int, "max_steps"), ("batch", int, "batch_size (pairs)"),
                            ("warmup", int, "warmup_steps"), ("lr-factor", float, "lr_factor"),
                            ("beta1", float, "adam_beta1"), ("beta2", float, "adam_beta2"),
                            ("adam-eps", float, "adam_epsilon"), ("weight-decay", float, "weight_decay"),
                            ("label-smoothing", float, "label_smoothing"), ("clip-norm", float, "clip_norm (0: off)"),
                            ("eval-interval", int, "eval_interval"), ("seed", int, "seed"),
                            ("beam", int, "num_beams"), ("length-penalty", float, "length_penalty (GNMT α)"),
                            ("early-stopping", str, "early_stopping: true, false or never"),
                            ("score-size", int, "test pairs scored (0: all)"),
                            ("dropout", float, "the model's dropout")]:
        ap.add_argument("--" + flag, type=typ, help=what + " (default: the run config's, else the zoo's)")
    ap.add_argument("--pad-to", choices=["bucket", "longest"], default="bucket",
                    help="bucket: the zoo's shapes (bound x batch_size); longest: each batch's longest pair")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    ap.add_argument("--out", help="result JSON")
    ap.add_argument("--hyps-prefix", help="writes PREFIX.greedy.txt and PREFIX.beam.txt")
    ap.add_argument("--metrics", help="per-step records, as the zoo's metrics.jsonl")
    ap.add_argument("--init-from", help="start from this Marian checkpoint (its config.json and weights; "
                    "default: the run config's init_from)")
    ap.add_argument("--save-checkpoint", help="write the trained model here in Marian's layout")
    ap.add_argument("--check-checkpoint", help="a zoo checkpoint: compare its loss and outputs here")
    ap.add_argument("--check-n", type=int, default=50, help="test sources decoded by --check-checkpoint")
    ap.add_argument("--zoo", help="with --check-checkpoint: a zoo binary to run `translate` with")
    return ap.parse_args()


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)

    def log(s):
        print(s, flush=True)

    if args.check_checkpoint:
        return check_checkpoint(args, log)
    for need in ("ids", "config", "tokenizer", "test_tsv"):
        if getattr(args, need) is None:
            sys.exit("--%s is required (or give --check-checkpoint)" % need.replace("_", "-"))
    tok = common.ByteLevelTokenizer(args.tokenizer)
    c, recipe, init_from = resolve(args, tok)
    sets = OrderedDict((k, read_ids(os.path.join(args.ids, k + ".jsonl"))) for k in ("train", "valid", "test"))
    check_ids(c, sets)
    pairs, _ = common.read_parallel_tsv(args.test_tsv)
    check_aligned(tok, sets["test"], pairs, c["max_position_embeddings"] - 1, args.test_tsv)
    scored = len(pairs) if recipe["score_size"] <= 0 else min(len(pairs), recipe["score_size"])
    model = Seq2Seq(c)
    if init_from:
        load_checkpoint(model, os.path.join(init_from, "model.safetensors"))
        log("weights from %s" % init_from)
        torch.manual_seed(recipe["seed"])  # dropout
    else:
        model.init_weights(recipe["seed"])
    n_params = sum(p.numel() for p in model.parameters())
    log("torch %s, %d threads; model %d parameters (%d+%d layers, %d wide, %d heads, vocabulary %d)" % (
        torch.__version__, torch.get_num_threads(), n_params, c["encoder_layers"], c["decoder_layers"], c["d_model"],
        c["encoder_attention_heads"], c["vocab_size"]))
    log("recipe: %s" % json.dumps(recipe))
    rss0 = status_mb("VmRSS")
    tr = train(model, recipe, sets["train"], sets["valid"], args.pad_to, args.metrics, log)
    peak_train = status_mb("VmHWM")
    if args.save_checkpoint:
        save_checkpoint(model, args.save_checkpoint, args.tokenizer)
        log("checkpoint: %s" % args.save_checkpoint)
    srcs = [s for s, _ in sets["test"][:scored]]
    refs = [t for _, t in pairs[:scored]]
    scores = score(model, tok, srcs, refs, recipe, args.hyps_prefix, log)
    run_dir = os.path.normpath(os.path.join(args.ids, ".."))
    result = OrderedDict([
        ("generator", GENERATOR), ("torch", torch.__version__), ("python", platform.python_version()),
        ("threads", torch.get_num_threads()), ("pad_to", args.pad_to),
        ("model", c), ("recipe", recipe), ("init_from", init_from), ("params", n_params),
        ("train_pairs", len(sets["train"])), ("valid_pairs", len(sets["valid"])), ("test_pairs", len(pairs)),
        ("scored_pairs", scored)])
    result.update(tr)
    result.update([("rss_after_import_mb", rss0), ("peak_rss_train_mb", peak_train),
                   ("peak_rss_mb", status_mb("VmHWM")), ("scores", scores)])
    zoo = zoo_run_summary(run_dir)
    if zoo:
        result["zoo_run"] = zoo
    log("done: %d steps, %.1f s training (%.0f target tokens/s), %.1f s evaluating; validation loss %.4f; "
        "peak RSS %.0f MB" % (tr["steps"], tr["train_seconds"], tr["tokens_per_sec"], tr["eval_seconds"],
                              tr["val_loss"], result["peak_rss_mb"]))
    if zoo:
        log("zoo run (%s steps): validation loss %s, step seconds %.1f (%.0f tok/s), %s" % (
            zoo.get("steps"), zoo.get("val_loss"), zoo.get("step_seconds_sum", float("nan")),
            zoo.get("tokens_per_sec") or float("nan"),
            "; ".join("%s BLEU %.2f chrF %.2f" % (s["strategy"], s["bleu"], s["chrf"]) for s in zoo.get("scores", []))))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2, ensure_ascii=False)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
