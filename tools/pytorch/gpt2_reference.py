#!/usr/bin/env python3
"""Reference GPT-2 (Hugging Face GPT2LMHeadModel, eager attention) in plain PyTorch.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/gpt2_reference.py [--out models/gpt/testdata/parity]

No `transformers` package is available here, so this file re-implements
transformers' modeling_gpt2.py (GPT2LMHeadModel, eager attention path) with
the same module and parameter names: model.state_dict() has exactly the keys
of a real GPT-2 checkpoint saved by GPT2LMHeadModel.save_pretrained
(`transformer.wte.weight`, `transformer.h.0.attn.c_attn.weight`, ...;
`lm_head.weight` is tied to `transformer.wte.weight`). The causal-mask
buffer `attn.bias` is non-persistent, as in transformers >= 4.31; older hub
files (e.g. openai-community/gpt2's model.safetensors) also contain
`h.{i}.attn.bias` / `h.{i}.attn.masked_bias` and have no `transformer.` prefix;
load_pretrained() accepts both layouts.

Semantics reproduced from HF:

* Conv1D: weight (in, out), y = x @ W + b (torch.addmm).
* Attention: c_attn -> split(d) into q, k, v; heads by view(B,T,h,hd) and
  permute(0,2,1,3); scores = q k^T / sqrt(hd) (a division, as HF; none with
  scale_attn_weights=False; then / (layer_idx + 1) with
  scale_attn_by_inverse_layer_idx=True); causal
  mask via torch.where(causal, scores, finfo.min); then the additive padding
  mask (1 - attention_mask) * finfo.min; softmax; attn dropout; merge heads;
  c_proj; resid dropout. past_key_values: past k, v are concatenated with the
  new ones along the time axis (HF's layer_past), the causal mask is
  bias[key_len-query_len : key_len, :key_len]. reorder_and_upcast_attn=True
  takes HF's _upcast_and_reordered_attn instead: scores by
  torch.baddbmm(..., alpha=scale) in float32, softmax in float32.
* Block (pre-norm): x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)); mlp =
  c_proj(act(c_fc(x))) + dropout; act = gelu_new (tanh approximation),
  gelu (exact erf) or relu.
* Embeddings: wte(ids) + wpe(position_ids), dropout embd_pdrop; ln_f at the
  end; lm_head = Linear(d, V, bias=False) sharing wte's weight.
* position_ids default: arange(past_len, past_len + T). For left-padded
  batches HF's generate (prepare_inputs_for_generation) uses
  position_ids = attention_mask.cumsum(-1) - 1 with padded positions set to 1
  -- see position_ids_from_attention_mask(); GPT2Model.forward itself does not
  do this, so pass position_ids explicitly.
* HF init: N(0, initializer_range) for Linear/Conv1D/Embedding weights, zero
  biases, LayerNorm (1, 0), and every `c_proj.weight` (attn and mlp) with std
  initializer_range / sqrt(2 * n_layer).

Padded *query* rows (attention_mask == 0) get meaningless outputs in HF (their
whole score row is finfo.min-ish, so the softmax is near-uniform over
arbitrary keys, including future ones); only rows with attention_mask == 1
are meaningful and the parity test must compare only those.

When run as a script it writes the parity test data for models/gpt (see
main() and tools/pytorch/README.md) and checks the module against an
independent float64 functional re-implementation, its KV-cache path against
the no-cache path, and that save -> load round-trips. It then writes
attn_variants.safetensors beside them: the same weights run with GPT2Config's
attention options (see build_attn_variants; --variants-only writes just that
file from an existing parity directory).
"""

import argparse
import json
import math
import os
import struct
import sys
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from safetensors_io import read_safetensors, write_safetensors

GENERATOR = "tools/pytorch/gpt2_reference.py"

# --------------------------------------------------------------------------
# config
# --------------------------------------------------------------------------


class GPT2Config:
    """The subset of transformers.GPT2Config that GPT2LMHeadModel uses."""

    def __init__(self, vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12,
                 n_head=12, n_inner=None, activation_function="gelu_new",
                 resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1,
                 layer_norm_epsilon=1e-5, initializer_range=0.02,
                 bos_token_id=50256, eos_token_id=50256, scale_attn_weights=True,
                 scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False, **extra):
        self.vocab_size = vocab_size
        self.n_positions = n_positions
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_inner = n_inner
        self.activation_function = activation_function
        self.resid_pdrop = resid_pdrop
        self.embd_pdrop = embd_pdrop
        self.attn_pdrop = attn_pdrop
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.scale_attn_weights = scale_attn_weights
        self.scale_attn_by_inverse_layer_idx = scale_attn_by_inverse_layer_idx
        self.reorder_and_upcast_attn = reorder_and_upcast_attn
        self.extra = extra  # unknown config.json keys, kept for round-trips

    def to_dict(self, note=None):
        d = OrderedDict()
        d["architectures"] = ["GPT2LMHeadModel"]
        d["model_type"] = "gpt2"
        d["vocab_size"] = self.vocab_size
        d["n_positions"] = self.n_positions
        d["n_embd"] = self.n_embd
        d["n_layer"] = self.n_layer
        d["n_head"] = self.n_head
        d["n_inner"] = self.n_inner
        d["activation_function"] = self.activation_function
        d["resid_pdrop"] = self.resid_pdrop
        d["embd_pdrop"] = self.embd_pdrop
        d["attn_pdrop"] = self.attn_pdrop
        d["layer_norm_epsilon"] = self.layer_norm_epsilon
        d["initializer_range"] = self.initializer_range
        d["bos_token_id"] = self.bos_token_id
        d["eos_token_id"] = self.eos_token_id
        d["scale_attn_weights"] = self.scale_attn_weights
        d["scale_attn_by_inverse_layer_idx"] = self.scale_attn_by_inverse_layer_idx
        d["reorder_and_upcast_attn"] = self.reorder_and_upcast_attn
        # fixed GPT2Config defaults this implementation assumes
        d["use_cache"] = True
        d["tie_word_embeddings"] = True
        d["torch_dtype"] = "float32"
        if note:
            d["_note"] = note
        return d

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        for k in ("architectures", "model_type", "use_cache", "tie_word_embeddings",
                  "torch_dtype", "_note"):
            d.pop(k, None)
        return cls(**d)


# --------------------------------------------------------------------------
# modules (HF names)
# --------------------------------------------------------------------------


def gelu_new(x):
    """transformers.activations.NewGELUActivation (tanh approximation)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACT2FN = {
    "gelu_new": gelu_new,
    "gelu": F.gelu,  # exact erf GELU
    "relu": F.relu,
}


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: a Linear with the weight transposed."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(nn.Module):
    def __init__(self, config, layer_idx=0):
        super().__init__()
        n = config.n_positions
        self.register_buffer(
            "bias", torch.tril(torch.ones((n, n), dtype=torch.bool)).view(1, 1, n, n),
            persistent=False)
        self.embed_dim = config.n_embd
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError("n_embd must be divisible by n_head")
        self.scale_attn_weights = config.scale_attn_weights
        self.scale_attn_by_inverse_layer_idx = config.scale_attn_by_inverse_layer_idx
        self.reorder_and_upcast_attn = config.reorder_and_upcast_attn
        self.layer_idx = layer_idx
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def _attn(self, query, key, value, attention_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        if self.scale_attn_weights:
            attn_weights = attn_weights / torch.full(
                [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        if self.scale_attn_by_inverse_layer_idx:  # layer-wise attention scaling
            attn_weights = attn_weights / float(self.layer_idx + 1)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.full([], torch.finfo(attn_weights.dtype).min,
                                dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value)

    def _upcast_and_reordered_attn(self, query, key, value, attention_mask=None):
        """HF's reorder_and_upcast_attn path: the scale folded into a float32
        baddbmm (alpha), the softmax in float32 (a no-op upcast in float32)."""
        bsz, num_heads, q_seq_len, dk = query.size()
        k_seq_len = key.size(-2)
        # HF preallocates with torch.empty and passes beta=0, meant to ignore
        # it; torch 1.13's CPU baddbmm then lets uninitialised memory (NaN)
        # through for some shapes, nondeterministically. Zeros with beta=1
        # add an exact 0 to alpha * (q @ k): what beta=0 means.
        scale_factor = 1.0
        if self.scale_attn_weights:
            scale_factor /= float(value.size(-1)) ** 0.5
        if self.scale_attn_by_inverse_layer_idx:
            scale_factor /= float(self.layer_idx + 1)
        q = query.reshape(-1, q_seq_len, dk)
        k = key.transpose(-1, -2).reshape(-1, dk, k_seq_len)
        attn_weights = torch.zeros(bsz * num_heads, q_seq_len, k_seq_len, dtype=torch.float32)
        attn_weights = torch.baddbmm(attn_weights, q.float(), k.float(), beta=1, alpha=scale_factor)
        attn_weights = attn_weights.reshape(bsz, num_heads, q_seq_len, k_seq_len)
        causal_mask = self.bias[:, :, k_seq_len - q_seq_len: k_seq_len, :k_seq_len]
        mask_value = torch.tensor(torch.finfo(attn_weights.dtype).min, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value)

    def _split_heads(self, t):
        t = t.view(t.size()[:-1] + (self.num_heads, self.head_dim))
        return t.permute(0, 2, 1, 3)  # (B, h, T, hd)

    def _merge_heads(self, t):
        t = t.permute(0, 2, 1, 3).contiguous()
        return t.view(t.size()[:-2] + (self.num_heads * self.head_dim,))

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query)
        key = self._split_heads(key)
        value = self._split_heads(value)
        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        present = (key, value) if use_cache else None
        if self.reorder_and_upcast_attn:
            out = self._upcast_and_reordered_attn(query, key, value, attention_mask)
        else:
            out = self._attn(query, key, value, attention_mask)
        out = self.c_proj(self._merge_heads(out))
        out = self.resid_dropout(out)
        return out, present


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, intermediate_size)
        self.act = ACT2FN[config.activation_function]
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, config, layer_idx=0):
        super().__init__()
        inner = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner, config)

    def forward(self, x, layer_past=None, attention_mask=None, use_cache=False):
        a, present = self.attn(self.ln_1(x), layer_past=layer_past,
                               attention_mask=attention_mask, use_cache=use_cache)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, present


class GPT2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config, i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)

    def forward(self, input_ids, past_key_values=None, attention_mask=None,
                position_ids=None, use_cache=False):
        B, T = input_ids.shape
        if past_key_values is None:
            past_length = 0
            past_key_values = [None] * len(self.h)
        else:
            past_length = past_key_values[0][0].size(-2)
        if position_ids is None:
            position_ids = torch.arange(past_length, past_length + T, dtype=torch.long,
                                        device=input_ids.device).unsqueeze(0)
        dtype = self.wte.weight.dtype
        if attention_mask is not None:
            attention_mask = attention_mask.view(B, -1)[:, None, None, :].to(dtype=dtype)
            attention_mask = (1.0 - attention_mask) * torch.finfo(dtype).min
        hidden = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        presents = [] if use_cache else None
        for block, layer_past in zip(self.h, past_key_values):
            hidden, present = block(hidden, layer_past=layer_past,
                                    attention_mask=attention_mask, use_cache=use_cache)
            if use_cache:
                presents.append(present)
        return self.ln_f(hidden), presents


class GPT2LMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        self.lm_head.weight = self.transformer.wte.weight  # tie_weights()

    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, (nn.Linear, Conv1D)):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        # "Scale the weights of residual layers at initialization" (GPT-2 paper)
        for name, p in module.named_parameters():
            if name == "c_proj.weight":
                p.data.normal_(mean=0.0, std=std / math.sqrt(2 * self.config.n_layer))

    def forward(self, input_ids, past_key_values=None, attention_mask=None,
                position_ids=None, use_cache=False):
        """Returns logits (B, T, V), or (logits, presents) when use_cache."""
        hidden, presents = self.transformer(input_ids, past_key_values=past_key_values,
                                            attention_mask=attention_mask,
                                            position_ids=position_ids, use_cache=use_cache)
        logits = self.lm_head(hidden)
        return (logits, presents) if use_cache else logits


def hf_lm_loss(logits, labels):
    """HF GPT2LMHeadModel loss: shift so token t predicts t+1, ignore -100."""
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    return F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1),
                           ignore_index=-100)


def position_ids_from_attention_mask(attention_mask):
    """HF prepare_inputs_for_generation rule for left-padded batches."""
    position_ids = attention_mask.long().cumsum(-1) - 1
    position_ids.masked_fill_(attention_mask == 0, 1)
    return position_ids


# --------------------------------------------------------------------------
# generation
# --------------------------------------------------------------------------


@torch.no_grad()
def generate_greedy(model, ids, max_new_tokens, block_size=None):
    """nanoGPT-style greedy decoding without a KV cache.

    ids: (T,) or (B, T) long. At every step the context is cropped to its last
    block_size (default n_positions) tokens and run through the model with
    positions 0..len-1 (positions restart at 0 for the cropped window); the
    argmax of the last position's logits (first index on ties) is appended.
    Returns only the new tokens, shape (max_new_tokens,) or (B, max_new_tokens).
    """
    if block_size is None:
        block_size = model.config.n_positions
    squeeze = ids.dim() == 1
    seq = ids.view(1, -1) if squeeze else ids
    start = seq.size(1)
    for _ in range(max_new_tokens):
        ctx = seq if seq.size(1) <= block_size else seq[:, -block_size:]
        logits = model(ctx)
        nxt = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
        seq = torch.cat((seq, nxt), dim=1)
    out = seq[:, start:]
    return out[0] if squeeze else out


@torch.no_grad()
def generate_greedy_cached(model, ids, max_new_tokens):
    """Greedy decoding with past_key_values (HF style). The prompt plus the new
    tokens must fit in n_positions (no sliding window with a cache)."""
    squeeze = ids.dim() == 1
    seq = ids.view(1, -1) if squeeze else ids
    if seq.size(1) + max_new_tokens - 1 > model.config.n_positions:
        raise ValueError("cached generation would run past n_positions")
    logits, past = model(seq, use_cache=True)
    outs = []
    for i in range(max_new_tokens):
        nxt = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
        outs.append(nxt)
        if i + 1 == max_new_tokens:
            break
        logits, past = model(nxt, past_key_values=past, use_cache=True)
    out = torch.cat(outs, dim=1)
    return out[0] if squeeze else out


def save_pretrained(model, out_dir, note=None):
    """Like GPT2LMHeadModel.save_pretrained(safe_serialization=True): writes
    model.safetensors (F32, `transformer.`-prefixed keys, sorted by name, no
    tied lm_head.weight, metadata {"format": "pt"}) and config.json."""
    os.makedirs(out_dir, exist_ok=True)
    sd = model.state_dict()
    tensors = OrderedDict((k, sd[k].to(torch.float32)) for k in sorted(sd) if k != "lm_head.weight")
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, {"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(model.config.to_dict(note), f, indent=2)
        f.write("\n")


def load_pretrained(model_dir):
    """Inverse of save_pretrained; also accepts keys without the
    `transformer.` prefix and the legacy attn.bias / attn.masked_bias buffers."""
    with open(os.path.join(model_dir, "config.json")) as f:
        config = GPT2Config.from_dict(json.load(f))
    tensors, _ = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    sd = OrderedDict()
    for k, v in tensors.items():
        if k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue
        if not k.startswith("transformer.") and k != "lm_head.weight":
            k = "transformer." + k
        sd[k] = v
    sd.setdefault("lm_head.weight", sd["transformer.wte.weight"])
    model = GPT2LMHeadModel(config)
    model.load_state_dict(sd, strict=True)
    model.lm_head.weight = model.transformer.wte.weight
    return model


def hf_gpt2_state_dict_keys(n_layer):
    """The keys of GPT2LMHeadModel(...).state_dict() in transformers >= 4.31."""
    keys = ["transformer.wte.weight", "transformer.wpe.weight"]
    for i in range(n_layer):
        p = "transformer.h.%d." % i
        keys += [p + s for s in (
            "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
            "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
            "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")]
    keys += ["transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"]
    return keys


# --------------------------------------------------------------------------
# independent check: functional float64 GPT-2 from a state dict
# --------------------------------------------------------------------------


def functional_gpt2(sd, cfg, ids, attention_mask=None, position_ids=None):
    """Plain-tensor GPT-2 forward in float64, written independently of the
    modules: explicit LayerNorm, per-head loop, -inf masking, explicit
    softmax. Padded query rows are returned as NaN-free but meaningless."""
    P = {k: v.detach().to(torch.float64) for k, v in sd.items()}
    B, T = ids.shape
    d, h = cfg.n_embd, cfg.n_head
    hd = d // h
    eps = cfg.layer_norm_epsilon
    if position_ids is None:
        position_ids = torch.arange(T).view(1, T).expand(B, T)

    def ln(x, pre):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * P[pre + ".weight"] + P[pre + ".bias"]

    def act(x):
        if cfg.activation_function == "gelu_new":
            return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        if cfg.activation_function == "gelu":
            return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
        return x.clamp(min=0)

    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, T, T).expand(B, T, T)
    if attention_mask is not None:
        keymask = attention_mask.bool().view(B, 1, T)
        # keep at least the diagonal so padded query rows stay finite
        allowed = (allowed & keymask) | torch.eye(T, dtype=torch.bool).view(1, T, T)
    x = P["transformer.wte.weight"][ids] + P["transformer.wpe.weight"][position_ids]
    for i in range(cfg.n_layer):
        p = "transformer.h.%d." % i
        a = ln(x, p + "ln_1")
        qkv = a @ P[p + "attn.c_attn.weight"] + P[p + "attn.c_attn.bias"]
        heads = []
        for j in range(h):
            q = qkv[..., j * hd:(j + 1) * hd]
            k = qkv[..., d + j * hd:d + (j + 1) * hd]
            v = qkv[..., 2 * d + j * hd:2 * d + (j + 1) * hd]
            s = q @ k.transpose(1, 2)
            if cfg.scale_attn_weights:
                s = s / math.sqrt(hd)
            if cfg.scale_attn_by_inverse_layer_idx:
                s = s / (i + 1)
            s = s.masked_fill(~allowed, float("-inf"))
            e = torch.exp(s - s.max(-1, keepdim=True).values)
            heads.append((e / e.sum(-1, keepdim=True)) @ v)
        att = torch.cat(heads, -1) @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"]
        x = x + att
        m = act(ln(x, p + "ln_2") @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"])
        x = x + m @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"]
    x = ln(x, "transformer.ln_f")
    return x @ P["transformer.wte.weight"].t()


# --------------------------------------------------------------------------
# parity data
# --------------------------------------------------------------------------

TINY = dict(vocab_size=96, n_positions=24, n_embd=32, n_layer=2, n_head=4, n_inner=None,
            activation_function="gelu_new", resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1,
            layer_norm_epsilon=1e-5, initializer_range=0.02, bos_token_id=95, eos_token_id=95)

REDRAW_NOTE = ("tiny random GPT-2 for parity tests, torch.manual_seed(0): HF init, then every "
               "weight re-drawn with larger std to make the test sensitive: wte/wpe N(0,0.5^2), "
               "other matrices N(0,0.25^2), biases N(0,0.1^2), LayerNorm weight 1+N(0,0.1^2), "
               "LayerNorm bias N(0,0.1^2). Written by " + GENERATOR)


def redraw_(model):
    """Re-draw every parameter with larger std (in named_parameters order)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in ("transformer.wte.weight", "transformer.wpe.weight"):
                p.normal_(0.0, 0.5)
            elif ".ln_" in name or name.startswith("transformer.ln_f"):
                if name.endswith(".weight"):
                    p.copy_(1.0 + 0.1 * torch.randn_like(p))
                else:
                    p.normal_(0.0, 0.1)
            elif name.endswith(".bias"):
                p.normal_(0.0, 0.1)
            else:
                p.normal_(0.0, 0.25)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)
    print("  ok: " + msg)


def build_parity(out_dir):
    torch.manual_seed(0)
    cfg = GPT2Config(**TINY)
    model = GPT2LMHeadModel(cfg)

    # HF init sanity: c_proj std and zero biases (before the re-draw)
    sd0 = model.state_dict()
    n = sum(sd0["transformer.h.%d.attn.c_proj.weight" % i].numel() for i in range(cfg.n_layer))
    cstd = torch.cat([sd0["transformer.h.%d.%s.c_proj.weight" % (i, m)].flatten()
                      for i in range(cfg.n_layer) for m in ("attn", "mlp")]).std().item()
    print("HF init: c_proj std %.4f (expect %.4f over %d+ values), c_attn std %.4f" % (
        cstd, 0.02 / math.sqrt(2 * cfg.n_layer), n,
        sd0["transformer.h.0.attn.c_attn.weight"].std().item()))

    redraw_(model)
    model.eval()
    V = cfg.vocab_size
    eos = cfg.eos_token_id

    input_ids = torch.randint(0, V - 1, (3, 10))
    with torch.no_grad():
        logits = model(input_ids)

    # left-padded batch: row 0 = 3 pads (eos) + 4 tokens, row 1 = 7 tokens
    real0 = torch.randint(0, V - 1, (4,))
    row1 = torch.randint(0, V - 1, (7,))
    input_ids_batch = torch.stack([torch.cat([torch.full((3,), eos, dtype=torch.long), real0]), row1])
    attention_mask_batch = torch.tensor([[0, 0, 0, 1, 1, 1, 1], [1] * 7], dtype=torch.long)
    position_ids_batch = position_ids_from_attention_mask(attention_mask_batch)
    with torch.no_grad():
        logits_batch = model(input_ids_batch, attention_mask=attention_mask_batch,
                             position_ids=position_ids_batch)

    prompt = torch.randint(0, V - 1, (5,))
    greedy = generate_greedy(model, prompt, 15, cfg.n_positions)
    greedy_long = generate_greedy(model, prompt, 40, cfg.n_positions)

    # ---------------- checks ----------------
    print("checks:")
    sd = model.state_dict()
    check(list(sd.keys()) == hf_gpt2_state_dict_keys(cfg.n_layer),
          "state_dict keys equal HF GPT2LMHeadModel's (%d keys)" % len(sd))
    check(model.lm_head.weight is model.transformer.wte.weight, "lm_head tied to wte")
    check(sd["transformer.h.0.attn.c_attn.weight"].shape == (32, 96)
          and sd["transformer.h.0.mlp.c_fc.weight"].shape == (32, 128)
          and sd["transformer.h.0.mlp.c_proj.weight"].shape == (128, 32),
          "Conv1D weights are (in, out); n_inner=None -> 4*n_embd")

    ref = functional_gpt2(sd, cfg, input_ids)
    err = (logits.double() - ref).abs().max().item()
    check(err < 1e-4, "float32 module vs float64 functional reference: max |dlogits| = %.2e" % err)
    m64 = GPT2LMHeadModel(cfg)
    m64.load_state_dict(sd)
    m64.lm_head.weight = m64.transformer.wte.weight
    m64 = m64.double().eval()
    with torch.no_grad():
        err64 = (m64(input_ids) - ref).abs().max().item()
    check(err64 < 1e-10, "float64 module vs float64 functional reference: %.2e" % err64)

    ref_b = functional_gpt2(sd, cfg, input_ids_batch, attention_mask_batch, position_ids_batch)
    valid = attention_mask_batch.bool()
    err_b = (logits_batch.double() - ref_b)[valid].abs().max().item()
    check(err_b < 1e-4, "batch (left padding, HF position_ids) vs functional, valid rows: %.2e" % err_b)
    with torch.no_grad():
        solo0 = model(real0.view(1, -1))[0]
        solo1 = model(row1.view(1, -1))[0]
    e0 = (logits_batch[0, 3:] - solo0).abs().max().item()
    e1 = (logits_batch[1] - solo1).abs().max().item()
    check(max(e0, e1) < 1e-4,
          "batch rows equal the unpadded sequences run alone: %.2e / %.2e" % (e0, e1))
    check(torch.isfinite(logits_batch).all().item(), "batch logits finite (incl. padded rows)")

    # greedy: reference loop with explicit windowing
    seq = prompt.tolist()
    with torch.no_grad():
        for _ in range(40):
            ctx = torch.tensor(seq[-cfg.n_positions:]).view(1, -1)
            seq.append(int(ref_argmax(functional_gpt2(sd, cfg, ctx)[0, -1])))
    check(seq[5:] == greedy_long.tolist(), "greedy_long equals functional float64 sliding-window decode")
    check(greedy_long[:15].tolist() == greedy.tolist(), "greedy is a prefix of greedy_long")
    cached = generate_greedy_cached(model, prompt, cfg.n_positions - 5 + 1)
    check(cached.tolist() == greedy_long[:cfg.n_positions - 5 + 1].tolist(),
          "KV-cache decode equals no-cache decode for the first %d tokens" % (cfg.n_positions - 4))
    with torch.no_grad():
        full = model(input_ids)
        l1, past = model(input_ids[:, :6], use_cache=True)
        l2, past = model(input_ids[:, 6:], past_key_values=past, use_cache=True)
    e = (torch.cat([l1, l2], 1) - full).abs().max().item()
    check(e < 1e-5, "prefill 6 + 4 cached tokens vs full forward: %.2e" % e)
    # the sliding window must matter, or the greedy_long test is vacuous
    off_by_one = generate_greedy(model, prompt, 40, cfg.n_positions - 1)
    nd = sum(int(a != b) for a, b in zip(off_by_one.tolist(), greedy_long.tolist()))
    check(nd > 0, "greedy_long is sensitive to the window: block_size 23 changes %d/40 tokens" % nd)
    rolled = generate_greedy_rolling_cache(model, prompt, 40)
    check(rolled[:cfg.n_positions - 4].tolist() == greedy_long[:cfg.n_positions - 4].tolist(),
          "rolling-KV-cache decode agrees before the window fills")
    nd = sum(int(a != b) for a, b in zip(rolled.tolist(), greedy_long.tolist()))
    check(nd > 0, "a rolling KV cache (evict oldest k/v, keep stale positions) is NOT the "
          "reference semantics: it changes %d/40 tokens" % nd)
    s = prompt.tolist() + greedy_long.tolist()
    # smallest top1-top2 margin along every greedy step (tie robustness)
    mins = []
    with torch.no_grad():
        for i in range(40):
            ctx = torch.tensor(s[:5 + i][-cfg.n_positions:]).view(1, -1)
            mins.append(top2_margin(model, ctx))
    print("  info: min top1-top2 logit margin over the 40 greedy steps: %.4f" % min(mins))
    check(min(mins) > 1e-3, "greedy argmaxes are not near-ties")

    # ---------------- write ----------------
    os.makedirs(out_dir, exist_ok=True)
    save_pretrained(model, out_dir, note=REDRAW_NOTE)
    meta = OrderedDict()
    meta["generator"] = GENERATOR
    meta["torch"] = torch.__version__
    meta["seed"] = "0"
    meta["model"] = "model.safetensors + config.json in this directory (GPT2LMHeadModel layout)"
    meta["weights"] = REDRAW_NOTE
    meta["dtype"] = "float32 forward in eval mode (dropout off); token ids are I64"
    meta["logits"] = "model(input_ids), positions arange(T)"
    meta["logits_batch"] = (
        "model(input_ids_batch, attention_mask=attention_mask_batch, position_ids=position_ids_batch); "
        "row 0 left-padded by 3 with pad id = eos = 95; additive mask (1-m)*finfo(f32).min after "
        "the causal where(); position_ids = cumsum(mask)-1 with padded positions set to 1 "
        "(HF prepare_inputs_for_generation). Only rows with attention_mask==1 are meaningful: "
        "compare logits_batch[b,t] only where attention_mask_batch[b,t]==1. "
        "logits_batch[0,3:] equals the logits of input_ids_batch[0,3:] run alone.")
    meta["greedy"] = ("15 tokens appended to prompt by greedy decoding (argmax of last logits, "
                      "no KV cache, full forward of the whole sequence each step)")
    meta["greedy_long"] = (
        "40 greedy tokens after prompt (45 total > n_positions=24). nanoGPT sliding window: "
        "before each step the context is cropped to its last 24 tokens and fed with positions "
        "0..23 (positions restart at 0 for the cropped window; no cache). greedy == greedy_long[:15].")
    meta["n_positions"] = str(cfg.n_positions)
    meta["pad_id"] = str(eos)
    golden = OrderedDict()
    golden["input_ids"] = input_ids
    golden["logits"] = logits
    golden["input_ids_batch"] = input_ids_batch
    golden["attention_mask_batch"] = attention_mask_batch
    golden["position_ids_batch"] = position_ids_batch
    golden["logits_batch"] = logits_batch
    golden["prompt"] = prompt
    golden["greedy"] = greedy
    golden["greedy_long"] = greedy_long
    gpath = os.path.join(out_dir, "golden.safetensors")
    write_safetensors(gpath, golden, meta)

    # ---------------- round trips ----------------
    print("round trips:")
    model2 = load_pretrained(out_dir).eval()
    sd2 = model2.state_dict()
    check(all(torch.equal(sd[k], sd2[k]) for k in sd) and list(sd2) == list(sd),
          "save_pretrained -> load_pretrained: identical state_dict")
    check(model2.lm_head.weight is model2.transformer.wte.weight, "reloaded lm_head tied")
    with torch.no_grad():
        check(torch.equal(model2(input_ids), logits), "reloaded model gives bit-identical logits")
    raw, mmeta = read_safetensors(os.path.join(out_dir, "model.safetensors"))
    check(mmeta == {"format": "pt"} and "lm_head.weight" not in raw
          and all(k.startswith("transformer.") for k in raw)
          and all(v.dtype == torch.float32 for v in raw.values()),
          "model.safetensors: %d F32 tensors, transformer.* keys, no lm_head.weight, "
          "metadata {format: pt}" % len(raw))
    g, gmeta = read_safetensors(gpath)
    check(all(torch.equal(g[k], golden[k]) and g[k].dtype == golden[k].dtype for k in golden)
          and gmeta == meta, "golden.safetensors reads back identical (%d tensors)" % len(g))

    print("summary:")
    print("  logits: mean %.3f std %.3f max|.| %.3f" % (
        logits.mean().item(), logits.std().item(), logits.abs().max().item()))
    probs = torch.softmax(logits, -1)
    print("  max softmax prob per position: median %.3f" % probs.max(-1).values.median().item())
    print("  prompt      %s" % prompt.tolist())
    print("  greedy      %s (%d distinct)" % (greedy.tolist(), len(set(greedy.tolist()))))
    print("  greedy_long %s (%d distinct)" % (greedy_long.tolist(), len(set(greedy_long.tolist()))))
    for fn in sorted(os.listdir(out_dir)):
        print("  %-20s %8d bytes" % (fn, os.path.getsize(os.path.join(out_dir, fn))))


# GPT2Config's attention options, each run on the parity weights: name -> options.
ATTN_VARIANTS = OrderedDict([
    ("unscaled", dict(scale_attn_weights=False)),
    ("inverse_layer", dict(scale_attn_by_inverse_layer_idx=True)),
    ("unscaled_inverse_layer", dict(scale_attn_weights=False, scale_attn_by_inverse_layer_idx=True)),
    ("reorder", dict(reorder_and_upcast_attn=True)),
    ("reorder_inverse_layer", dict(reorder_and_upcast_attn=True, scale_attn_by_inverse_layer_idx=True)),
])


def build_attn_variants(out_dir):
    """Writes out_dir/attn_variants.safetensors: for each of ATTN_VARIANTS, the
    parity model (out_dir's config.json and model.safetensors) run with those
    GPT2Config options: logits.<name> of input_ids and greedy.<name>, 15
    greedy tokens after prompt (no cache; checked against the KV cache)."""
    base = load_pretrained(out_dir).eval()
    sd = base.state_dict()
    golden, _ = read_safetensors(os.path.join(out_dir, "golden.safetensors"))
    input_ids, prompt = golden["input_ids"], golden["prompt"]
    with torch.no_grad():
        base_logits = base(input_ids)
    base_greedy = generate_greedy(base, prompt, 15)
    print("attention variants:")
    e = (base_logits - golden["logits"]).abs().max().item()
    check(e < 1e-5, "the reloaded parity model gives the golden logits (to %.1e; they may come from "
          "another BLAS)" % e)
    check(base_greedy.tolist() == golden["greedy"].tolist(), "and the golden greedy tokens")
    out = OrderedDict()
    meta = OrderedDict()
    meta["generator"] = GENERATOR
    meta["torch"] = torch.__version__
    meta["model"] = ("config.json + model.safetensors in this directory, run with the GPT2Config options "
                     "of each variant (the rest of the config unchanged)")
    meta["logits.<variant>"] = "float32 model(input_ids) of golden.safetensors, eval mode"
    meta["greedy.<variant>"] = "15 greedy tokens after golden.safetensors' prompt, no cache (as greedy)"
    for name, opts in ATTN_VARIANTS.items():
        with open(os.path.join(out_dir, "config.json")) as f:
            d = json.load(f)
        d.update(opts)
        cfg = GPT2Config.from_dict(d)
        model = GPT2LMHeadModel(cfg)
        model.load_state_dict(sd)
        model.lm_head.weight = model.transformer.wte.weight
        model.eval()
        with torch.no_grad():
            logits = model(input_ids)
        greedy = generate_greedy(model, prompt, 15)
        ref = functional_gpt2(sd, cfg, input_ids)
        err = (logits.double() - ref).abs().max().item()
        check(err < 1e-4, "%s: module vs float64 functional: max |dlogits| = %.2e" % (name, err))
        cached = generate_greedy_cached(model, prompt, 15)
        check(cached.tolist() == greedy.tolist(), "%s: KV-cache greedy equals no-cache greedy" % name)
        diff = (logits - base_logits).abs().max().item()
        nd = sum(int(a != b) for a, b in zip(greedy.tolist(), base_greedy.tolist()))
        if opts.keys() == {"reorder_and_upcast_attn"}:
            check(diff < 1e-5 and nd == 0, "%s: equals the default attention in float32 "
                  "(max |dlogits| %.2e, same greedy tokens)" % (name, diff))
        else:
            check(diff > 0.1, "%s: differs from the default: max |dlogits| %.2f, %d/15 greedy tokens differ" % (name, diff, nd))
        out["logits." + name] = logits
        out["greedy." + name] = greedy
        meta[name] = json.dumps(opts, sort_keys=True)
    twin = (out["logits.reorder_inverse_layer"] - out["logits.inverse_layer"]).abs().max().item()
    check(twin < 1e-5, "reorder_inverse_layer equals inverse_layer in float32: %.2e" % twin)
    path = os.path.join(out_dir, "attn_variants.safetensors")
    write_safetensors(path, out, meta)
    back, bmeta = read_safetensors(path)
    check(all(torch.equal(back[k], out[k]) for k in out) and bmeta == meta,
          "attn_variants.safetensors reads back identical (%d tensors)" % len(back))


@torch.no_grad()
def generate_greedy_rolling_cache(model, ids, max_new_tokens):
    """A plausible but DIFFERENT windowing, used only to show the parity data
    tells it apart: keep a KV cache of at most n_positions entries, evict the
    oldest, and give each new token the position min(len, n_positions-1). The
    cached keys keep the positions they were computed with."""
    n = model.config.n_positions
    seq = ids.view(1, -1)[:, -n:]
    logits, past = model(seq, use_cache=True)
    length, outs = seq.size(1), []
    for i in range(max_new_tokens):
        nxt = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
        outs.append(nxt)
        if length >= n:
            past = [(k[:, :, 1:], v[:, :, 1:]) for k, v in past]
            length = n - 1
        pos = torch.tensor([[length]])
        logits, past = model(nxt, past_key_values=past, position_ids=pos, use_cache=True)
        length += 1
    return torch.cat(outs, dim=1)[0]


def ref_argmax(v):
    return int(torch.argmax(v).item())


def top2_margin(model, ctx):
    with torch.no_grad():
        top = torch.topk(model(ctx)[0, -1], 2).values
    return (top[0] - top[1]).item()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "models", "gpt", "testdata", "parity"))
    ap = argparse.ArgumentParser(description="HF GPT-2 reference + parity data")
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--variants-only", action="store_true",
                    help="write only attn_variants.safetensors, from the parity files already in --out")
    args = ap.parse_args()
    torch.set_num_threads(1)  # deterministic reductions
    if not args.variants_only:
        build_parity(args.out)
    build_attn_variants(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
