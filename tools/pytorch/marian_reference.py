#!/usr/bin/env python3
"""Reference Marian (Hugging Face MarianMTModel, eager attention) in plain PyTorch,
and the golden fixture of the Go models/seq2seq package.

Run with the Debian torch package (see tools/pytorch/README.md):

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread OMP_NUM_THREADS=2 \\
        /usr/bin/python3 tools/pytorch/marian_reference.py [--out models/seq2seq/testdata/marian] [case ...]
    /usr/bin/python3 tools/pytorch/marian_reference.py --check DIR --case opus_shared

No `transformers` package is available here, so this file re-implements
transformers' modeling_marian.py (MarianMTModel, eager attention) and
configuration_marian.py with the same module and parameter names:
MarianMTModel(config).state_dict() has exactly the keys of transformers'
(`model.shared.weight`, `model.encoder.embed_tokens.weight`,
`model.encoder.embed_positions.weight`,
`model.encoder.layers.0.self_attn.q_proj.weight`, ...,
`model.decoder.layers.0.encoder_attn.k_proj.weight`, `lm_head.weight`,
`final_logits_bias`), and save_pretrained() / from_pretrained() below do what
transformers' do with them. Semantics reproduced from transformers:

* Embeddings: `embed_tokens(ids) * embed_scale` with embed_scale = sqrt(d_model)
  when scale_embedding (MarianConfig's default is False; OPUS-MT sets True),
  else 1; plus MarianSinusoidalPositionalEmbedding, a (max_position_embeddings,
  d) table with all sines first and all cosines after ("not interleaved"):
  PE[p, i] = sin(p / 10000^(2i/d)) for i < ceil(d/2), PE[p, ceil(d/2) + i] =
  cos(p / 10000^(2i/d)). Positions are arange(past_len, past_len + T): offset
  0 (BART's learned positions have offset 2), and a cached decoder step at
  past_len t uses position t. transformers builds the table in float64 numpy
  and stores it rounded to float32 (torch.FloatTensor); here it is kept in
  float64, which is what a float64 zoo model computes (the rounding moves
  float32 logits by ~1e-7 and is invisible at float32). No LayerNorm on the
  embeddings; dropout (0 here).
* share_encoder_decoder_embeddings (default True): one `model.shared` table
  for both sides, aliased as `model.{encoder,decoder}.embed_tokens`. When
  False, `model.shared` is None and the encoder and decoder get deep copies of
  a (vocab_size, d) table -- transformers' decoder table has vocab_size rows
  even when decoder_vocab_size differs, so the cases here use equal sizes.
* Attention (MarianAttention): q = q_proj(x) * head_dim^-0.5; scores q k^T;
  the additive mask holds finfo.min where a key is not allowed; softmax; out_proj.
  Encoder self-attention and cross-attention mask source padding
  (attention_mask); decoder self-attention is causal AND decoder_attention_mask.
  Padded query rows are computed like the others.
* Layers are post-norm (x = LN(x + f(x))): encoder `self_attn`,
  `self_attn_layer_norm`, `fc1`, `fc2`, `final_layer_norm`; decoder adds
  `encoder_attn`, `encoder_attn_layer_norm` after self-attention. LayerNorm
  eps 1e-5 (nn.LayerNorm's default; MarianConfig has no field).
  activation_function via ACT2FN: relu, gelu (exact erf), gelu_new (tanh),
  swish/silu (x * sigmoid(x)).
* lm_head = Linear(d, V_tgt, bias=False), tied to the decoder's embedding table
  when tie_word_embeddings (default True); logits = lm_head(h) +
  final_logits_bias, a (1, V_tgt) buffer (not a parameter: not trained).
* Loss: CrossEntropyLoss over labels with ignore_index -100; the smoothed loss
  is F.cross_entropy(label_smoothing=0.1) (torch 1.13), which the zoo's Loss
  computes.
* save_pretrained(safe_serialization): leaves out _keys_to_ignore_on_save
  (`model.{encoder,decoder}.embed_positions.weight`) and, of tensors that share
  storage, deletes the names matching _tied_weights_keys
  (`model.encoder.embed_tokens.weight`, `model.decoder.embed_tokens.weight`,
  `lm_head.weight`) in sorted order but the last: a shared tied model keeps
  only `model.shared.weight`, a separate tied one `model.{encoder,decoder}.
  embed_tokens.weight` without `lm_head.weight`. `final_logits_bias` is
  written. config.json: sorted keys, indent 2.
* from_pretrained: tied names absent from the file are filled from the tensor
  they alias; `final_logits_bias` and the `embed_positions` tables may be
  missing (_keys_to_ignore_on_load_missing); then load_state_dict(strict=True).
  Any other missing or unexpected key is an error here (transformers warns).

Init (deliberately large, so that plausible bugs move the logits clearly):
torch.manual_seed(seed), then in named_parameters() order Linear and embedding
weights and Linear biases N(0, 0.15^2), LayerNorm weight 1 + N(0, 0.1^2) and bias
N(0, 0.1^2), then final_logits_bias N(0, 0.3^2), then the token ids. The script
asserts that each of these bugs moves the logits at valid positions by at
least 0.05: the paper's interleaved position table instead of Marian's, the
embedding scale flipped, final_logits_bias left out.

Run as a script it writes one directory per case under --out (config.json and
model.safetensors as save_pretrained writes them, F64, and case.safetensors
with inputs and expected outputs; see CASES and tools/pytorch/README.md) after
checking: the module against the functional reference of seq2seq_reference.py
(case separate_untied, whose activation that script has), cached greedy
decoding against uncached, every row alone against the batch, the key set
against transformers' save rules, and that save -> from_pretrained round-trips.

--check DIR loads a checkpoint directory written by the zoo (seq2seq.Model.Save)
with from_pretrained (strict) and compares its logits: with --case NAME,
against that fixture case (the zoo loaded the case and saved it again); without,
against DIR/case.safetensors (a model the zoo made from scratch, with the
logits the zoo computed). The Go tests TestMarianSaveIsSavePretrained and
TestMarianFreshSave write these directories when ZOO_MARIAN_SAVE_DIR is set:

    ZOO_MARIAN_SAVE_DIR=/tmp/zoo go test ./models/seq2seq -run 'TestMarian(SaveIsSavePretrained|FreshSave)'
    for c in opus_shared separate_untied; do python3 marian_reference.py --check /tmp/zoo/$c --case $c; done
    python3 marian_reference.py --check /tmp/zoo/zoo_fresh

Result (torch 1.13, Go 1.26): the two re-saved cases load strictly with the
fixture's keys (86 and 72), every Marian field of the zoo's config.json equals
the fixture's and the other fields come back unchanged, and the logits equal
the fixture's exactly (max |diff| 0: the weights round-trip bit-identical).
zoo_fresh (Tiny, swish, 2+3 layers, a N(0, 0.3^2) final_logits_bias, a padded
batch of 2) loads strictly with 112 keys (model.shared.weight, final_logits_bias
and the layers) and its logits equal the zoo's to max |diff| 2e-15 (logits std
0.93). The other way, seq2seq.Load of the fixture gives logits within 1e-15 of
the ones here (opus_shared 1.0e-15, separate_untied 8.9e-16), encoder outputs
within 1.1e-15, losses within 8.9e-16, and the same greedy tokens and
log-probabilities through the KV cache.
"""

import argparse
import copy
import json
import math
import os
import re
import sys
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetensors_io import read_safetensors, write_safetensors

torch.set_default_dtype(torch.float64)

GENERATOR = "tools/pytorch/marian_reference.py"
INIT_STD = 0.15
LN_STD = 0.1
BIAS_STD = 0.3  # final_logits_bias
SMOOTHING = 0.1
MIN_SENSITIVITY = 0.05

# --------------------------------------------------------------------------
# config
# --------------------------------------------------------------------------

# MarianConfig's defaults (transformers 4.x/5.x configuration_marian.py).
MARIAN_DEFAULTS = OrderedDict(
    vocab_size=58101, decoder_vocab_size=None, max_position_embeddings=1024, encoder_layers=12,
    encoder_ffn_dim=4096, encoder_attention_heads=16, decoder_layers=12, decoder_ffn_dim=4096,
    decoder_attention_heads=16, encoder_layerdrop=0.0, decoder_layerdrop=0.0, use_cache=True,
    is_encoder_decoder=True, activation_function="gelu", d_model=1024, dropout=0.1,
    attention_dropout=0.0, activation_dropout=0.0, init_std=0.02, decoder_start_token_id=58100,
    scale_embedding=False, pad_token_id=58100, eos_token_id=0, forced_eos_token_id=0,
    share_encoder_decoder_embeddings=True, tie_word_embeddings=True)

# The fields that change the computation; --check compares them.
MARIAN_FIELDS = ["vocab_size", "decoder_vocab_size", "max_position_embeddings", "encoder_layers",
                 "encoder_ffn_dim", "encoder_attention_heads", "decoder_layers", "decoder_ffn_dim",
                 "decoder_attention_heads", "activation_function", "d_model", "scale_embedding",
                 "pad_token_id", "eos_token_id", "decoder_start_token_id",
                 "share_encoder_decoder_embeddings", "tie_word_embeddings"]


class MarianConfig:
    """The attributes of transformers.MarianConfig that MarianMTModel reads;
    the rest of config.json is kept as is."""

    def __init__(self, d):
        self.raw = OrderedDict(d)
        for k, v in MARIAN_DEFAULTS.items():
            setattr(self, k, d.get(k, v))
        self.decoder_vocab_size = self.decoder_vocab_size or self.vocab_size
        for k in ("static_position_embeddings", "normalize_before", "add_final_layer_norm",
                  "normalize_embedding", "add_bias_logits"):
            # transformers 3's BART fields; MarianMTModel implements only these values
            want = k == "static_position_embeddings"
            assert d.get(k, want) == want, "%s %r is not Marian" % (k, d[k])
        assert d.get("model_type") == "marian"


# --------------------------------------------------------------------------
# modules (names as in modeling_marian.py)
# --------------------------------------------------------------------------


def marian_table(n_pos, dim, interleaved=False):
    """MarianSinusoidalPositionalEmbedding._init_weight in float64; interleaved
    is the paper's layout (for the sensitivity report and seq2seq_reference)."""
    pos = torch.arange(n_pos, dtype=torch.float64).view(-1, 1)
    j = torch.arange(dim, dtype=torch.float64).view(1, -1)
    enc = pos / torch.pow(torch.tensor(10000.0), 2 * torch.div(j, 2, rounding_mode="floor") / dim)
    out = torch.zeros(n_pos, dim)
    if interleaved:
        out[:, 0::2] = torch.sin(enc[:, 0::2])
        out[:, 1::2] = torch.cos(enc[:, 1::2])
        return out
    sentinel = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out[:, :sentinel] = torch.sin(enc[:, 0::2])
    out[:, sentinel:] = torch.cos(enc[:, 1::2])
    return out


class MarianSinusoidalPositionalEmbedding(nn.Embedding):
    def __init__(self, num_positions, embedding_dim, interleaved=False):
        super().__init__(num_positions, embedding_dim)
        self.weight.requires_grad = False
        with torch.no_grad():
            self.weight.copy_(marian_table(num_positions, embedding_dim, interleaved))

    @torch.no_grad()
    def forward(self, input_ids_shape, past_key_values_length=0, offset=0):
        seq_len = input_ids_shape[1]
        positions = torch.arange(past_key_values_length, past_key_values_length + seq_len) + offset
        return super().forward(positions)


ACT2FN = {"relu": F.relu, "gelu": F.gelu, "swish": F.silu, "silu": F.silu,
          "gelu_new": lambda x: F.gelu(x, approximate="tanh")}


class MarianAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, t, bsz):
        return t.view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)  # (B, h, T, hd)

    def forward(self, hidden_states, key_value_states=None, past_key_value=None, attention_mask=None):
        """attention_mask: additive (B, 1, Tq, Tk). past_key_value: (k, v) of
        earlier steps (self-attention) or of the encoder (cross-attention)."""
        bsz, tgt_len, d = hidden_states.shape
        q = self._shape(self.q_proj(hidden_states) * self.scaling, bsz)
        if key_value_states is not None and past_key_value is not None:
            k, v = past_key_value
        elif key_value_states is not None:
            k, v = self._shape(self.k_proj(key_value_states), bsz), self._shape(self.v_proj(key_value_states), bsz)
        else:
            k, v = self._shape(self.k_proj(hidden_states), bsz), self._shape(self.v_proj(hidden_states), bsz)
            if past_key_value is not None:
                k, v = torch.cat([past_key_value[0], k], 2), torch.cat([past_key_value[1], v], 2)
        w = q @ k.transpose(-1, -2)
        if attention_mask is not None:
            w = w + attention_mask
        ctx = torch.softmax(w, -1) @ v
        out = self.out_proj(ctx.transpose(1, 2).reshape(bsz, tgt_len, d))
        return out, (k, v)


class MarianEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        d = config.d_model
        self.self_attn = MarianAttention(d, config.encoder_attention_heads)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.activation_fn = ACT2FN[config.activation_function]
        self.fc1 = nn.Linear(d, config.encoder_ffn_dim)
        self.fc2 = nn.Linear(config.encoder_ffn_dim, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, x, mask):
        x = self.self_attn_layer_norm(x + self.self_attn(x, attention_mask=mask)[0])
        return self.final_layer_norm(x + self.fc2(self.activation_fn(self.fc1(x))))


class MarianDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        d = config.d_model
        self.self_attn = MarianAttention(d, config.decoder_attention_heads)
        self.activation_fn = ACT2FN[config.activation_function]
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = MarianAttention(d, config.decoder_attention_heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, config.decoder_ffn_dim)
        self.fc2 = nn.Linear(config.decoder_ffn_dim, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, x, mask, memory, memory_mask, past=None):
        a, self_kv = self.self_attn(x, past_key_value=None if past is None else past[0], attention_mask=mask)
        x = self.self_attn_layer_norm(x + a)
        a, cross_kv = self.encoder_attn(x, key_value_states=memory, attention_mask=memory_mask,
                                        past_key_value=None if past is None else past[1])
        x = self.encoder_attn_layer_norm(x + a)
        x = self.final_layer_norm(x + self.fc2(self.activation_fn(self.fc1(x))))
        return x, (self_kv, cross_kv)


def expand_mask(mask, tgt_len):
    """(B, Tk) 1/0 -> additive (B, 1, Tq, Tk) with finfo.min at 0s."""
    inv = 1.0 - mask[:, None, None, :].to(torch.float64).expand(-1, 1, tgt_len, -1)
    return inv.masked_fill(inv.bool(), torch.finfo(torch.float64).min)


class MarianEncoder(nn.Module):
    def __init__(self, config, embed_tokens, bugs):
        super().__init__()
        self.bugs = bugs
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.embed_tokens = embed_tokens
        self.embed_positions = MarianSinusoidalPositionalEmbedding(
            config.max_position_embeddings, config.d_model, bugs.get("interleaved", False))
        self.layers = nn.ModuleList([MarianEncoderLayer(config) for _ in range(config.encoder_layers)])

    def forward(self, input_ids, attention_mask):
        scale = self.embed_scale
        if self.bugs.get("flip_scale"):
            scale = 1.0 if scale != 1.0 else math.sqrt(self.embed_tokens.weight.shape[1])
        x = self.embed_tokens(input_ids) * scale + self.embed_positions(
            input_ids.shape, offset=self.bugs.get("offset", 0))
        mask = expand_mask(attention_mask, input_ids.shape[1])
        for layer in self.layers:
            x = layer(x, mask)
        return x


class MarianDecoder(nn.Module):
    def __init__(self, config, embed_tokens, bugs):
        super().__init__()
        self.bugs = bugs
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.embed_tokens = embed_tokens
        self.embed_positions = MarianSinusoidalPositionalEmbedding(
            config.max_position_embeddings, config.d_model, bugs.get("interleaved", False))
        self.layers = nn.ModuleList([MarianDecoderLayer(config) for _ in range(config.decoder_layers)])

    def forward(self, input_ids, attention_mask, memory, memory_mask, past=None):
        B, T = input_ids.shape
        past_len = 0 if past is None else past[0][0][0].shape[2]
        scale = self.embed_scale
        if self.bugs.get("flip_scale"):
            scale = 1.0 if scale != 1.0 else math.sqrt(self.embed_tokens.weight.shape[1])
        x = self.embed_tokens(input_ids) * scale + self.embed_positions(
            input_ids.shape, past_len, offset=self.bugs.get("offset", 0))
        # causal over past + new keys, AND the decoder attention mask (B, past + T)
        keys = past_len + T
        allowed = torch.ones(T, keys, dtype=torch.bool).tril(past_len).view(1, 1, T, keys).expand(B, 1, T, keys)
        if attention_mask is not None:
            allowed = allowed & attention_mask.bool()[:, None, None, :]
        mask = torch.zeros(B, 1, T, keys).masked_fill(~allowed, torch.finfo(torch.float64).min)
        mem_mask = expand_mask(memory_mask, T)
        presents = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, mask, memory, mem_mask, None if past is None else past[i])
            presents.append(kv)
        return x, presents


class MarianModel(nn.Module):
    def __init__(self, config, bugs):
        super().__init__()
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        if config.share_encoder_decoder_embeddings:
            enc = dec = self.shared
        else:
            enc, dec = copy.deepcopy(self.shared), copy.deepcopy(self.shared)
            self.shared = None
        self.encoder = MarianEncoder(config, enc, bugs)
        self.decoder = MarianDecoder(config, dec, bugs)


class MarianMTModel(nn.Module):
    keys_to_ignore_on_load_missing = ["final_logits_bias", "encoder.embed_positions.weight",
                                      "decoder.embed_positions.weight"]
    keys_to_ignore_on_save = ["model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"]
    tied_weights_keys = ["model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"]

    def __init__(self, config, bugs=None):
        super().__init__()
        self.config, self.bugs = config, bugs or {}
        self.model = MarianModel(config, self.bugs)
        v = config.vocab_size if config.share_encoder_decoder_embeddings else config.decoder_vocab_size
        self.register_buffer("final_logits_bias", torch.zeros(1, v))
        self.lm_head = nn.Linear(config.d_model, v, bias=False)
        self.tie_weights()

    def tie_weights(self):
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.model.decoder.embed_tokens.weight

    def encode(self, input_ids, attention_mask):
        return self.model.encoder(input_ids, attention_mask)

    def decode(self, decoder_input_ids, decoder_attention_mask, memory, attention_mask, past=None):
        h, presents = self.model.decoder(decoder_input_ids, decoder_attention_mask, memory, attention_mask, past)
        logits = self.lm_head(h)
        if not self.bugs.get("no_bias"):
            logits = logits + self.final_logits_bias
        return logits, presents

    def forward(self, input_ids, attention_mask, decoder_input_ids, decoder_attention_mask=None):
        """Returns logits (B, Tt, V_tgt) and the encoder output (B, Ts, d)."""
        memory = self.encode(input_ids, attention_mask)
        return self.decode(decoder_input_ids, decoder_attention_mask, memory, attention_mask)[0], memory


def init_weights_(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_positions.weight"):
                continue
            if "layer_norm" in name:
                p.copy_(1.0 + torch.randn(p.shape) * LN_STD if name.endswith("weight") else torch.randn(p.shape) * LN_STD)
            else:
                p.copy_(torch.randn(p.shape) * INIT_STD)
        model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape) * BIAS_STD)


# --------------------------------------------------------------------------
# save_pretrained / from_pretrained
# --------------------------------------------------------------------------


def saved_state_dict(model):
    """What save_pretrained(safe_serialization=True) writes."""
    sd = OrderedDict((k, v) for k, v in model.state_dict().items() if k not in model.keys_to_ignore_on_save)
    by_storage = OrderedDict()
    for name, t in sd.items():
        by_storage.setdefault((t.data_ptr(), t.numel()), []).append(name)
    drop = set()
    for names in by_storage.values():
        if len(names) < 2:
            continue
        found = 0
        for name in sorted(names):
            if any(re.search(p, name) for p in model.tied_weights_keys):
                found += 1
                if found < len(names):
                    drop.add(name)
    return OrderedDict((k, sd[k].detach().clone()) for k in sorted(sd) if k not in drop)


def save_pretrained(model, out_dir, metadata=None):
    os.makedirs(out_dir, exist_ok=True)
    md = OrderedDict([("format", "pt")])
    md.update(metadata or {})
    write_safetensors(os.path.join(out_dir, "model.safetensors"), saved_state_dict(model), md)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(model.config.raw, f, indent=2, sort_keys=True)
        f.write("\n")


def tied_groups(model):
    """name -> every state_dict name holding the same tensor (itself included)."""
    by_storage = OrderedDict()
    for name, t in model.state_dict().items():
        by_storage.setdefault(t.data_ptr(), []).append(name)
    return {n: names for names in by_storage.values() for n in names}


def from_pretrained(model_dir, bugs=None):
    """Returns (model, the file's keys sorted)."""
    with open(os.path.join(model_dir, "config.json")) as f:
        config = MarianConfig(json.load(f, object_pairs_hook=OrderedDict))
    model = MarianMTModel(config, bugs)
    tensors, _ = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    full = model.state_dict()
    groups = tied_groups(model)
    unexpected = [k for k in tensors if k not in full]
    missing = []
    sd = OrderedDict()
    for k in full:
        present = [n for n in groups[k] if n in tensors]
        for n in present[1:]:  # tied names must agree: load_state_dict would keep the last
            if not torch.equal(tensors[n], tensors[present[0]]):
                raise RuntimeError("%s and %s are tied but differ" % (present[0], n))
        if present:
            sd[k] = tensors[present[0]]
        elif any(k.endswith(i) for i in model.keys_to_ignore_on_load_missing):
            sd[k] = full[k]
        else:
            missing.append(k)
    if missing or unexpected:
        raise RuntimeError("%s: missing %s, unexpected %s" % (model_dir, missing, unexpected))
    model.load_state_dict(sd, strict=True)
    model.tie_weights()
    return model, sorted(tensors)


# --------------------------------------------------------------------------
# generation, loss
# --------------------------------------------------------------------------


@torch.no_grad()
def greedy(model, input_ids, attention_mask, steps, cached=True):
    """Argmax decoding from decoder_start_token_id (first index on ties), at
    most `steps` tokens, eos included; no generation constraints (forced eos,
    bad words). Returns (tokens (B, steps) with -1 after eos, eos excluded;
    log P(tokens, eos | source) per row (B), eos counted if reached; smallest
    top-2 logit margin; per-step logits)."""
    cfg = model.config
    B = input_ids.shape[0]
    memory = model.encode(input_ids, attention_mask)
    seq = torch.full((B, 1), cfg.decoder_start_token_id, dtype=torch.long)
    out = torch.full((B, steps), -1, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    past, margin, all_logits = None, float("inf"), []
    logprob = torch.zeros(B)
    for t in range(steps):
        if cached:
            logits, past = model.decode(seq[:, -1:], None, memory, attention_mask, past)
        else:
            logits, _ = model.decode(seq, None, memory, attention_mask)
        last = logits[:, -1]
        all_logits.append(last)
        top = torch.topk(last, 2, -1).values
        margin = min(margin, (top[:, 0] - top[:, 1])[~done].min().item() if (~done).any() else margin)
        nxt = torch.argmax(last, -1)
        lp = torch.log_softmax(last, -1)
        for b in range(B):
            if not done[b]:
                logprob[b] += lp[b, nxt[b]]
                if nxt[b].item() == cfg.eos_token_id:
                    done[b] = True
                else:
                    out[b, t] = nxt[b]
        nxt = torch.where(done, torch.full_like(nxt, cfg.eos_token_id), nxt)
        seq = torch.cat([seq, nxt.view(B, 1)], 1)
        if done.all():
            break
    return out, logprob, margin, all_logits


def lm_loss(logits, labels, smoothing=0.0):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           ignore_index=-100, label_smoothing=smoothing)


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------


def opus_config(**kw):
    """A config.json as an OPUS-MT checkpoint converted by transformers has it,
    legacy and generation fields included (all inert)."""
    c = OrderedDict([
        ("_name_or_path", "zoo/marian-fixture-opus"), ("activation_dropout", 0.0),
        ("activation_function", "swish"), ("add_bias_logits", False), ("add_final_layer_norm", False),
        ("architectures", ["MarianMTModel"]), ("attention_dropout", 0.0), ("bad_words_ids", [[28]]),
        ("bos_token_id", 0), ("classif_dropout", 0.0), ("classifier_dropout", 0.0), ("d_model", 16),
        ("decoder_attention_heads", 4), ("decoder_ffn_dim", 32), ("decoder_layerdrop", 0.0),
        ("decoder_layers", 2), ("decoder_start_token_id", 28), ("decoder_vocab_size", 29),
        ("dropout", 0.0), ("encoder_attention_heads", 4), ("encoder_ffn_dim", 32),
        ("encoder_layerdrop", 0.0), ("encoder_layers", 2), ("eos_token_id", 0),
        ("extra_pos_embeddings", 29), ("forced_eos_token_id", 0), ("gradient_checkpointing", False),
        ("id2label", {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}), ("init_std", 0.02),
        ("is_encoder_decoder", True), ("label2id", {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2}),
        ("max_length", 512), ("max_position_embeddings", 16), ("model_type", "marian"),
        ("normalize_before", False), ("normalize_embedding", False), ("num_beams", 4),
        ("num_hidden_layers", 2), ("pad_token_id", 28), ("scale_embedding", True),
        ("share_encoder_decoder_embeddings", True), ("static_position_embeddings", True),
        ("task_specific_params", {"translation_en_to_de": {"num_beams": 4}}),
        ("torch_dtype", "float64"), ("transformers_version", "4.44.2"), ("use_cache", True),
        ("vocab_size", 29)])
    c.update(kw)
    return c


def plain_config(**kw):
    """A config.json as save_pretrained writes a MarianConfig built from
    arguments (transformers 4.44)."""
    c = OrderedDict([
        ("activation_dropout", 0.0), ("activation_function", "gelu"),
        ("architectures", ["MarianMTModel"]), ("attention_dropout", 0.0), ("bos_token_id", 1),
        ("d_model", 12), ("decoder_attention_heads", 3), ("decoder_ffn_dim", 20),
        ("decoder_layerdrop", 0.0), ("decoder_layers", 2), ("decoder_start_token_id", 1),
        ("decoder_vocab_size", 23), ("dropout", 0.0), ("encoder_attention_heads", 3),
        ("encoder_ffn_dim", 20), ("encoder_layerdrop", 0.0), ("encoder_layers", 1),
        ("eos_token_id", 2), ("forced_eos_token_id", 2), ("init_std", 0.02),
        ("is_encoder_decoder", True), ("max_position_embeddings", 16), ("model_type", "marian"),
        ("num_hidden_layers", 1), ("pad_token_id", 0), ("scale_embedding", False),
        ("share_encoder_decoder_embeddings", False), ("tie_word_embeddings", False),
        ("torch_dtype", "float64"), ("transformers_version", "4.44.2"), ("use_cache", True),
        ("vocab_size", 23)])
    c.update(kw)
    return c


CASES = OrderedDict([
    # OPUS-MT's conventions: swish, scaled embeddings, one shared and tied
    # vocabulary with eos 0 and pad = decoder start = V-1.
    ("opus_shared", dict(seed=0, config=opus_config(), src_lens=[7, 5, 3], tgt_lens=[5, 3, 4],
                         Ts=7, Tt=5, greedy_steps=6)),
    # Separate, untied tables, no embedding scale, gelu, pad 0 / start 1 / eos 2.
    ("separate_untied", dict(seed=1, config=plain_config(), src_lens=[6, 4], tgt_lens=[8, 5],
                             Ts=6, Tt=8, greedy_steps=6)),
])


def make_batch(cfg, spec):
    """input_ids: src_lens[b]-1 tokens then eos, right-padded; decoder_input_ids
    = [decoder_start, y...], decoder_attention_mask 1 on them; labels = [y...,
    eos], -100 after. Token ids avoid pad, eos and the decoder start."""
    special = {cfg.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id}
    pool = torch.tensor([i for i in range(min(cfg.vocab_size, cfg.decoder_vocab_size)) if i not in special])
    B, Ts, Tt = len(spec["src_lens"]), spec["Ts"], spec["Tt"]
    ids = torch.full((B, Ts), cfg.pad_token_id, dtype=torch.long)
    dec = torch.full((B, Tt), cfg.pad_token_id, dtype=torch.long)
    labels = torch.full((B, Tt), -100, dtype=torch.long)
    for b in range(B):
        n, m = spec["src_lens"][b], spec["tgt_lens"][b]
        ids[b, :n - 1] = pool[torch.randint(len(pool), (n - 1,))]
        ids[b, n - 1] = cfg.eos_token_id
        y = pool[torch.randint(len(pool), (m - 1,))]
        dec[b, 0] = cfg.decoder_start_token_id
        dec[b, 1:m] = y
        labels[b, :m - 1] = y
        labels[b, m - 1] = cfg.eos_token_id
    mask = (ids != cfg.pad_token_id).long()
    dmask = (labels != -100).long()
    return ids, mask, dec, dmask, labels


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)
    print("  ok: " + msg)


def functional_check(model, cfg, ids, mask, dec, dmask, logits):
    """The same weights through seq2seq_reference.forward (an independent
    functional Transformer, itself checked against nn.Transformer*Layer) with
    Marian's position layout, plus final_logits_bias."""
    import seq2seq_reference as ref
    if cfg.activation_function not in ("relu", "gelu") or cfg.pad_token_id == cfg.decoder_start_token_id:
        return
    scfg = dict(d_model=cfg.d_model, num_heads=cfg.encoder_attention_heads, num_encoder_layers=cfg.encoder_layers,
                num_decoder_layers=cfg.decoder_layers, layer_norm_eps=1e-5, pad_token_id=cfg.pad_token_id,
                norm_first=False, activation=cfg.activation_function,
                share_embeddings=cfg.share_encoder_decoder_embeddings, tie_output=cfg.tie_word_embeddings,
                src_vocab_size=cfg.vocab_size, tgt_vocab_size=cfg.decoder_vocab_size)
    P = OrderedDict((k, v) for k, v in saved_state_dict(model).items() if k != "final_logits_bias")
    opts = {"pe_concat": True, "no_embed_scale": not cfg.scale_embedding}
    with torch.no_grad():
        lg, _ = ref.forward(P, scfg, ids, dec, opts)
    e = (lg + model.final_logits_bias - logits).abs().max().item()
    check(e < 1e-12, "module == seq2seq_reference.forward (pe_concat) + final_logits_bias: max |dlogits| %.1e" % e)


def build_case(name, spec, out_root):
    print("== %s" % name)
    cfg = MarianConfig(spec["config"])
    model = MarianMTModel(cfg)
    init_weights_(model, spec["seed"])
    ids, mask, dec, dmask, labels = make_batch(cfg, spec)
    with torch.no_grad():
        logits, memory = model(ids, mask, dec, dmask)
    loss, loss_s = lm_loss(logits, labels), lm_loss(logits, labels, SMOOTHING)
    valid = labels != -100

    print("checks:")
    keys = list(saved_state_dict(model))
    want = {"final_logits_bias"}
    want |= {"model.shared.weight"} if cfg.share_encoder_decoder_embeddings else {
        "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"}
    if not cfg.tie_word_embeddings:
        want.add("lm_head.weight")
    embed_keys = {k for k in keys if "embed" in k or k in ("lm_head.weight", "final_logits_bias", "model.shared.weight")}
    check(embed_keys == want, "save_pretrained keeps %s and drops the tied aliases and embed_positions" % sorted(want))
    functional_check(model, cfg, ids, mask, dec, dmask, logits)
    check(bool(torch.isfinite(logits).all()), "logits finite; std %.3f" % logits.std().item())
    with torch.no_grad():
        worst = 0.0
        for b in range(ids.shape[0]):
            n, m = int(mask[b].sum()), int(dmask[b].sum())
            lg, mem = model(ids[b:b + 1, :n], mask[b:b + 1, :n], dec[b:b + 1, :m], dmask[b:b + 1, :m])
            worst = max(worst, (lg[0] - logits[b, :m]).abs().max().item(), (mem[0] - memory[b, :n]).abs().max().item())
    check(worst < 1e-12, "each row alone without padding matches the batch on its valid positions: %.1e" % worst)
    tokens, logprob, margin, cached_logits = greedy(model, ids, mask, spec["greedy_steps"])
    tokens2, _, _, full_logits = greedy(model, ids, mask, spec["greedy_steps"], cached=False)
    e = max((a - b).abs().max().item() for a, b in zip(cached_logits, full_logits))
    check(torch.equal(tokens, tokens2) and e < 1e-12,
          "cached greedy (decoder positions from past_len) == uncached: max |dlogits| %.1e" % e)
    check(margin > 1e-6, "greedy top-2 margins at least %.2e (no near-ties)" % margin)

    print("sensitivity (max |dlogits| at valid positions):")
    for bug, required in [("interleaved", True), ("flip_scale", True), ("no_bias", True), ("offset", False)]:
        b = {bug: 2 if bug == "offset" else True}
        other = MarianMTModel(cfg, b)
        other.load_state_dict(OrderedDict((k, v) for k, v in model.state_dict().items()
                                          if "embed_positions" not in k), strict=False)
        other.tie_weights()
        with torch.no_grad():
            lg, _ = other(ids, mask, dec, dmask)
        d = (lg - logits)[valid].abs().max().item()
        label = {"offset": "positions offset 2 (BART)"}.get(bug, bug)
        print("  %-28s %.3f" % (label, d))
        if required:
            check(d >= MIN_SENSITIVITY, "%s moves the logits by %.3f >= %.2f" % (label, d, MIN_SENSITIVITY))

    out_dir = os.path.join(out_root, name)
    save_pretrained(model, out_dir)
    C = OrderedDict([("input_ids", ids), ("attention_mask", mask), ("decoder_input_ids", dec),
                     ("decoder_attention_mask", dmask), ("labels", labels), ("logits", logits),
                     ("encoder_out", memory), ("loss", loss), ("loss_smoothed", loss_s), ("greedy", tokens),
                     ("greedy_logprob", logprob)])
    cmeta = OrderedDict([
        ("generator", GENERATOR), ("torch", torch.__version__), ("case", name), ("seed", str(spec["seed"])),
        ("input_ids", "(B, Ts) I64: tokens then eos, right-padded with pad_token_id"),
        ("attention_mask", "(B, Ts) I64: 1 on tokens and eos"),
        ("decoder_input_ids", "(B, Tt) I64: [decoder_start_token_id, y...], right-padded with pad_token_id"),
        ("decoder_attention_mask", "(B, Tt) I64: 1 on the start and y"),
        ("labels", "(B, Tt) I64: [y..., eos], -100 after"),
        ("logits", "(B, Tt, V) F64 at all positions: lm_head(h) + final_logits_bias"),
        ("encoder_out", "(B, Ts, d) F64: the encoder's output at all positions"),
        ("loss", "[] F64: cross-entropy over labels != -100"),
        ("loss_smoothed", "[] F64: the same with label_smoothing 0.1 (torch 1.13)"),
        ("greedy", "(B, steps) I64: argmax decoding of input_ids from decoder_start_token_id, eos "
                   "excluded, -1 after it; steps tokens at most, eos included"),
        ("greedy_logprob", "(B) F64: log P(greedy tokens, eos | input) under the model, eos counted "
                           "if reached"),
    ])
    write_safetensors(os.path.join(out_dir, "case.safetensors"), C, cmeta)

    print("round trips:")
    back, files = from_pretrained(out_dir)
    check(files == sorted(keys), "model.safetensors holds %d tensors under the keys save_pretrained writes" % len(files))
    with torch.no_grad():
        lg, _ = back(ids, mask, dec, dmask)
    check(torch.equal(lg, logits), "from_pretrained(save_pretrained(model)) gives bit-identical logits")
    c2, _ = read_safetensors(os.path.join(out_dir, "case.safetensors"))
    check(all(torch.equal(c2[k], C[k]) for k in C), "case.safetensors reads back identical")
    print("summary: loss %.12f  loss_smoothed %.12f  greedy %s  log P %s" % (
        loss.item(), loss_s.item(), tokens.tolist(), [round(x, 6) for x in logprob.tolist()]))
    for fn in sorted(os.listdir(out_dir)):
        size = os.path.getsize(os.path.join(out_dir, fn))
        print("  %-20s %8d bytes" % (fn, size))
        assert size < 128 * 1024, "%s too large" % fn


def check_zoo(zoo_dir, fixture_root, name):
    """Loads a zoo-written checkpoint as transformers would and compares it
    with the fixture case it was saved from, or, without a case, with the
    inputs and logits in its own case.safetensors (a model the zoo made)."""
    if name is None:
        print("== --check %s against its case.safetensors" % zoo_dir)
        model, files = from_pretrained(zoo_dir)
        check(True, "strict load of %d keys: %s" % (len(files), ", ".join(
            k for k in files if ".layers." not in k)))
        C, _ = read_safetensors(os.path.join(zoo_dir, "case.safetensors"))
        with torch.no_grad():
            lg, _ = model(C["input_ids"], C["attention_mask"], C["decoder_input_ids"], C["decoder_attention_mask"])
        e = (lg - C["logits"]).abs().max().item()
        check(e <= 1e-10, "logits == the zoo's: max |diff| %.3g (logits std %.3f)" % (e, lg.std().item()))
        return
    print("== --check %s against %s" % (zoo_dir, name))
    fix = os.path.join(fixture_root, name)
    model, files = from_pretrained(zoo_dir)
    ref_model, ref_files = from_pretrained(fix)
    check(files == ref_files, "strict load: no missing or unexpected keys; the same %d keys as the fixture" % len(files))
    with open(os.path.join(zoo_dir, "config.json")) as f:
        zc = json.load(f)
    with open(os.path.join(fix, "config.json")) as f:
        fc = json.load(f)
    diff = [k for k in MARIAN_FIELDS if getattr(model.config, k) != getattr(ref_model.config, k)]
    check(not diff, "every Marian field of the zoo's config.json equals the fixture's")
    inert = [k for k in fc if k not in MARIAN_FIELDS and zc.get(k) != fc[k]]
    check(not inert, "the fixture's other fields are written back unchanged")
    C, _ = read_safetensors(os.path.join(fix, "case.safetensors"))
    with torch.no_grad():
        lg, _ = model(C["input_ids"], C["attention_mask"], C["decoder_input_ids"], C["decoder_attention_mask"])
    e = (lg - C["logits"]).abs().max().item()
    check(e <= 1e-10, "logits of the zoo-written checkpoint == the fixture's: max |diff| %.3g" % e)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "models", "seq2seq", "testdata", "marian"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--check", help="a zoo-written checkpoint directory to load and compare")
    ap.add_argument("--case", help="the fixture case --check compares with; none: DIR's case.safetensors")
    ap.add_argument("cases", nargs="*", help="subset of %s (default: all)" % list(CASES))
    args = ap.parse_args()
    torch.set_num_threads(1)  # deterministic reductions
    if args.check:
        check_zoo(args.check, args.out, args.case)
        return 0
    for name in args.cases or list(CASES):
        build_case(name, CASES[name], args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
