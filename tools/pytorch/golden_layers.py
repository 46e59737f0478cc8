#!/usr/bin/env python3
"""Generate golden test vectors for the Go layers package.

Run with the Debian torch package (see tools/pytorch/README.md):

    /usr/bin/python3 tools/pytorch/golden_layers.py [--out layers/testdata/golden]

Every case is computed in float64 with a fixed seed and written to
<out>/<case>.safetensors (all tensors F64).  Naming inside each file:

  parameters   exact names (weight, bias, q_proj.weight, fc1.bias, ...);
               Linear weights are (out, in) as in torch.nn.Linear
  inputs       in.x, in.mem, in.mask, in.mem_mask, in.logits, in.targets
               masks: 1 = attend, 0 = padding, shape (B, Tk)
               targets: integers stored as F64, -100 = ignored
  in.r         N(0,1) tensor of the output's shape; the scalar loss used
               for gradients is (y * r).sum()
  outputs      out.y (or as documented per case), out.probs for attention
  gradients    grad.x, grad.mem, grad.<param name>

The safetensors writer is implemented here (json + struct) so that no
extra python package is needed.
"""

import argparse
import json
import math
import os
import struct
import sys
import zlib
from collections import OrderedDict

import torch
import torch.nn.functional as F

from safetensors_io import read_safetensors, write_safetensors

torch.set_default_dtype(torch.float64)

GENERATOR = "tools/pytorch/golden_layers.py"
LN_EPS = 1e-5

# --------------------------------------------------------------------------
# safetensors I/O: everything here is stored as F64
# --------------------------------------------------------------------------


def write_f64(path, tensors, metadata):
    """Write an ordered mapping name -> tensor as F64 safetensors."""
    write_safetensors(path, OrderedDict((k, t.detach().to(torch.float64)) for k, t in tensors.items()), metadata)


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def seed_for(case):
    return zlib.crc32(case.encode("utf-8")) & 0x7FFFFFFF


def randn(*shape, std=1.0):
    return torch.randn(*shape) * std


class Params:
    """Ordered collection of leaf parameters that require grad."""

    def __init__(self):
        self.d = OrderedDict()

    def add(self, name, t):
        t = t.detach().clone().requires_grad_(True)
        self.d[name] = t
        return t

    def linear(self, prefix, n_in, n_out, bias=True):
        self.add(prefix + "weight", randn(n_out, n_in, std=0.3))
        if bias:
            self.add(prefix + "bias", randn(n_out, std=0.1))

    def layernorm(self, prefix, dim, bias=True):
        self.add(prefix + "weight", 1.0 + randn(dim, std=0.1))
        if bias:
            self.add(prefix + "bias", randn(dim, std=0.1))

    def mha(self, prefix, d):
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            self.linear(prefix + p + ".", d, d)

    def get(self, name):
        return self.d.get(name)


def linear(P, prefix, x):
    return F.linear(x, P.get(prefix + "weight"), P.get(prefix + "bias"))


def layernorm(P, prefix, x, eps=LN_EPS):
    # explicit formula: biased variance over last dim
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps) * P.get(prefix + "weight")
    b = P.get(prefix + "bias")
    if b is not None:
        y = y + b
    return y


def gelu_exact(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


ACTS = {"gelu": gelu_exact, "gelu_tanh": gelu_tanh, "relu": torch.relu}


def mha(P, prefix, xq, xkv, heads, causal=False, mask=None):
    """Multi-head attention; returns (out, probs). mask: (B,Tk), 1=attend."""
    B, Tq, d = xq.shape
    Tk = xkv.shape[1]
    hd = d // heads
    q = linear(P, prefix + "q_proj.", xq).view(B, Tq, heads, hd).transpose(1, 2)
    k = linear(P, prefix + "k_proj.", xkv).view(B, Tk, heads, hd).transpose(1, 2)
    v = linear(P, prefix + "v_proj.", xkv).view(B, Tk, heads, hd).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)  # (B,h,Tq,Tk)
    allowed = torch.ones(B, 1, Tq, Tk, dtype=torch.bool)
    if causal:
        i = torch.arange(Tq).view(Tq, 1)
        j = torch.arange(Tk).view(1, Tk)
        allowed = allowed & (j <= i + (Tk - Tq)).view(1, 1, Tq, Tk)
    if mask is not None:
        allowed = allowed & (mask != 0).view(B, 1, 1, Tk)
    assert allowed.any(-1).all(), "fully masked row"
    scores = scores.masked_fill(~allowed, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    ctx = (probs @ v).transpose(1, 2).contiguous().view(B, Tq, d)
    return linear(P, prefix + "out_proj.", ctx), probs


def ffn(P, x, act):
    return linear(P, "fc2.", ACTS[act](linear(P, "fc1.", x)))


def encoder_block(P, x, mask, heads, act, norm):
    if norm == "post":
        h = layernorm(P, "self_attn_layer_norm.", x + mha(P, "self_attn.", x, x, heads, mask=mask)[0])
        return layernorm(P, "final_layer_norm.", h + ffn(P, h, act))
    ln1 = layernorm(P, "self_attn_layer_norm.", x)
    h = x + mha(P, "self_attn.", ln1, ln1, heads, mask=mask)[0]
    return h + ffn(P, layernorm(P, "final_layer_norm.", h), act)


def decoder_block(P, x, mem, mask, mem_mask, heads, act, norm):
    if norm == "post":
        h1 = layernorm(P, "self_attn_layer_norm.",
                       x + mha(P, "self_attn.", x, x, heads, causal=True, mask=mask)[0])
        h2 = layernorm(P, "encoder_attn_layer_norm.",
                       h1 + mha(P, "encoder_attn.", h1, mem, heads, mask=mem_mask)[0])
        return layernorm(P, "final_layer_norm.", h2 + ffn(P, h2, act))
    ln1 = layernorm(P, "self_attn_layer_norm.", x)
    h1 = x + mha(P, "self_attn.", ln1, ln1, heads, causal=True, mask=mask)[0]
    h2 = h1 + mha(P, "encoder_attn.", layernorm(P, "encoder_attn_layer_norm.", h1), mem, heads,
                  mask=mem_mask)[0]
    return h2 + ffn(P, layernorm(P, "final_layer_norm.", h2), act)


def base_meta(case, **kw):
    m = OrderedDict(generator=GENERATOR, torch=torch.__version__, case=case)
    for k, v in kw.items():
        m[k] = v if isinstance(v, str) else json.dumps(v) if isinstance(v, (list, dict)) else str(v)
    return m


def finish_grad_case(case, P, inputs, y, extra_out=None, grad_inputs=(), meta=None):
    """Common tail: draw r, backprop (y*r).sum(), collect tensors."""
    r = torch.randn(y.shape)
    (y * r).sum().backward()
    T = OrderedDict()
    for k, v in P.d.items():
        T[k] = v
    for k, v in inputs.items():
        T["in." + k] = v
    T["in.r"] = r
    T["out.y"] = y
    for k, v in (extra_out or {}).items():
        T["out." + k] = v
    for k in grad_inputs:
        T["grad." + k] = inputs[k].grad
    for k, v in P.d.items():
        T["grad." + k] = v.grad
    return T, meta


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------


def case_linear(case, bias):
    P = Params()
    P.linear("", 5, 4, bias=bias)
    x = randn(2, 3, 5).requires_grad_(True)
    y = linear(P, "", x)
    ref = torch.nn.functional.linear(x, P.get("weight"), P.get("bias"))
    assert torch.equal(y, ref)
    return finish_grad_case(case, P, {"x": x}, y, grad_inputs=["x"],
                            meta=base_meta(case, bias=bias, in_features=5, out_features=4))


def case_layernorm(case, eps, bias):
    P = Params()
    P.layernorm("", 6, bias=bias)
    x = randn(2, 3, 6).requires_grad_(True)
    y = layernorm(P, "", x, eps=eps)
    ref = F.layer_norm(x, (6,), P.get("weight"), P.get("bias"), eps)
    assert torch.allclose(y, ref, atol=1e-12, rtol=0)
    return finish_grad_case(case, P, {"x": x}, y, grad_inputs=["x"],
                            meta=base_meta(case, eps=repr(eps), bias=bias))


def case_gelu(case):
    x = torch.empty(3, 7).uniform_(-4.0, 4.0)
    assert (x.abs() > 1e-3).all()
    r = torch.randn(3, 7)
    T = OrderedDict()
    T["in.x"] = x
    T["in.r"] = r
    outs, grads = OrderedDict(), OrderedDict()
    for name, fn, ref in (
        ("gelu", gelu_exact, lambda t: F.gelu(t)),
        ("gelu_tanh", gelu_tanh, lambda t: F.gelu(t, approximate="tanh")),
        ("relu", torch.relu, F.relu),
    ):
        xi = x.clone().requires_grad_(True)
        y = fn(xi)
        assert torch.allclose(y, ref(x), atol=1e-14, rtol=0), name
        (y * r).sum().backward()
        outs[name] = y
        grads[name] = xi.grad
    for k, v in outs.items():
        T["out." + k] = v
    for k, v in grads.items():
        T["grad." + k] = v
    return T, base_meta(case, note="out.<act>=act(in.x); grad.<act>=d/dx (act(x)*in.r).sum()")


def case_mha(case, causal, mask_kind):
    B, T, d, h = 2, 5, 8, 2
    P = Params()
    P.mha("", d)
    x = randn(B, T, d).requires_grad_(True)
    inputs = OrderedDict(x=x)
    mask = None
    if mask_kind == "pad":
        mask = torch.ones(B, T)
        mask[1, -2:] = 0
        inputs["mask"] = mask
    y, probs = mha(P, "", x, x, h, causal=causal, mask=mask)
    # cross-check against torch.nn.MultiheadAttention (same math)
    check_against_torch_mha(P, x, x, h, causal, mask, y, probs)
    return finish_grad_case(case, P, inputs, y, extra_out={"probs": probs}, grad_inputs=["x"],
                            meta=base_meta(case, B=B, T=T, d=d, heads=h, causal=causal,
                                           self_attention=True))


def case_mha_cross(case):
    B, Tq, Tk, d, h = 2, 3, 5, 8, 2
    P = Params()
    P.mha("", d)
    x = randn(B, Tq, d).requires_grad_(True)
    mem = randn(B, Tk, d).requires_grad_(True)
    mask = torch.ones(B, Tk)
    mask[0, -1] = 0
    y, probs = mha(P, "", x, mem, h, causal=False, mask=mask)
    check_against_torch_mha(P, x, mem, h, False, mask, y, probs)
    return finish_grad_case(case, P, OrderedDict(x=x, mem=mem, mask=mask), y,
                            extra_out={"probs": probs}, grad_inputs=["x", "mem"],
                            meta=base_meta(case, B=B, Tq=Tq, Tk=Tk, d=d, heads=h, causal=False,
                                           self_attention=False,
                                           note="queries from in.x, keys/values from in.mem, "
                                                "in.mask masks keys of in.mem"))


def check_against_torch_mha(P, xq, xkv, h, causal, mask, y, probs):
    d = xq.shape[-1]
    m = torch.nn.MultiheadAttention(d, h, dropout=0.0, bias=True, batch_first=True)
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.cat([P.get(p + "_proj.weight") for p in "qkv"], 0))
        m.in_proj_bias.copy_(torch.cat([P.get(p + "_proj.bias") for p in "qkv"], 0))
        m.out_proj.weight.copy_(P.get("out_proj.weight"))
        m.out_proj.bias.copy_(P.get("out_proj.bias"))
    Tq, Tk = xq.shape[1], xkv.shape[1]
    attn_mask = None
    if causal:
        i = torch.arange(Tq).view(Tq, 1)
        j = torch.arange(Tk).view(1, Tk)
        attn_mask = ~(j <= i + (Tk - Tq))
    kpm = None if mask is None else (mask == 0)
    with torch.no_grad():
        ry, rp = m(xq, xkv, xkv, key_padding_mask=kpm, attn_mask=attn_mask,
                   need_weights=True, average_attn_weights=False)
    assert torch.allclose(ry, y, atol=1e-12), "MHA mismatch vs torch"
    assert torch.allclose(rp, probs, atol=1e-12), "MHA probs mismatch vs torch"


def check_against_torch_layer(P, norm, act, x, y, mask, mem=None, mem_mask=None):
    """Cross-check the block against torch.nn.Transformer{En,De}coderLayer."""
    d = x.shape[-1]
    dff = P.get("fc1.weight").shape[0]
    heads = 2
    kw = dict(dropout=0.0, activation=act, batch_first=True, norm_first=(norm == "pre"))
    if mem is None:
        L = torch.nn.TransformerEncoderLayer(d, heads, dff, **kw)
        attns = ((L.self_attn, "self_attn."),)
        norms = ((L.norm1, "self_attn_layer_norm."), (L.norm2, "final_layer_norm."))
    else:
        L = torch.nn.TransformerDecoderLayer(d, heads, dff, **kw)
        attns = ((L.self_attn, "self_attn."), (L.multihead_attn, "encoder_attn."))
        norms = ((L.norm1, "self_attn_layer_norm."), (L.norm2, "encoder_attn_layer_norm."),
                 (L.norm3, "final_layer_norm."))
    L.train()  # avoid the inference fast path; dropout is 0 anyway
    with torch.no_grad():
        for a, pre in attns:
            a.in_proj_weight.copy_(torch.cat([P.get(pre + c + "_proj.weight") for c in "qkv"], 0))
            a.in_proj_bias.copy_(torch.cat([P.get(pre + c + "_proj.bias") for c in "qkv"], 0))
            a.out_proj.weight.copy_(P.get(pre + "out_proj.weight"))
            a.out_proj.bias.copy_(P.get(pre + "out_proj.bias"))
        for n, pre in norms:
            n.weight.copy_(P.get(pre + "weight"))
            n.bias.copy_(P.get(pre + "bias"))
        L.linear1.weight.copy_(P.get("fc1.weight"))
        L.linear1.bias.copy_(P.get("fc1.bias"))
        L.linear2.weight.copy_(P.get("fc2.weight"))
        L.linear2.bias.copy_(P.get("fc2.bias"))
        if mem is None:
            ry = L(x, src_key_padding_mask=(mask == 0))
        else:
            T = x.shape[1]
            causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            ry = L(x, mem, tgt_mask=causal, tgt_key_padding_mask=(mask == 0),
                   memory_key_padding_mask=(mem_mask == 0))
    assert torch.allclose(ry, y, atol=1e-12), "block mismatch vs torch layer"


def case_encoder(case, norm):
    B, T, d, h, dff, act = 2, 5, 8, 2, 16, "gelu"
    P = Params()
    P.mha("self_attn.", d)
    P.layernorm("self_attn_layer_norm.", d)
    P.linear("fc1.", d, dff)
    P.linear("fc2.", dff, d)
    P.layernorm("final_layer_norm.", d)
    x = randn(B, T, d).requires_grad_(True)
    mask = torch.ones(B, T)
    mask[1, -1] = 0
    y = encoder_block(P, x, mask, h, act, norm)
    check_against_torch_layer(P, norm, act, x, y, mask)
    return finish_grad_case(case, P, OrderedDict(x=x, mask=mask), y, grad_inputs=["x"],
                            meta=base_meta(case, B=B, T=T, d=d, heads=h, d_ff=dff,
                                           activation=act, norm=norm, eps=repr(LN_EPS),
                                           causal=False))


def case_decoder(case, norm):
    B, T, Tm, d, h, dff, act = 2, 4, 5, 8, 2, 16, "relu"
    P = Params()
    P.mha("self_attn.", d)
    P.layernorm("self_attn_layer_norm.", d)
    P.mha("encoder_attn.", d)
    P.layernorm("encoder_attn_layer_norm.", d)
    P.linear("fc1.", d, dff)
    P.linear("fc2.", dff, d)
    P.layernorm("final_layer_norm.", d)
    x = randn(B, T, d).requires_grad_(True)
    mem = randn(B, Tm, d).requires_grad_(True)
    mask = torch.ones(B, T)
    mask[0, -1] = 0
    mem_mask = torch.ones(B, Tm)
    mem_mask[1, -2:] = 0
    y = decoder_block(P, x, mem, mask, mem_mask, h, act, norm)
    check_against_torch_layer(P, norm, act, x, y, mask, mem=mem, mem_mask=mem_mask)
    return finish_grad_case(case, P, OrderedDict(x=x, mem=mem, mask=mask, mem_mask=mem_mask), y,
                            grad_inputs=["x", "mem"],
                            meta=base_meta(case, B=B, T=T, Tm=Tm, d=d, heads=h, d_ff=dff,
                                           activation=act, norm=norm, eps=repr(LN_EPS),
                                           causal=True))


def sinusoidal(T, D, base):
    pe = torch.zeros(T, D)
    pos = torch.arange(T, dtype=torch.float64).view(T, 1)
    i2 = torch.arange(0, D, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(float(base)), i2 / D)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe


def case_sinusoidal(case):
    T = OrderedDict()
    T["out.pe"] = sinusoidal(7, 8, 10000)
    T["out.pe_base100"] = sinusoidal(7, 8, 100)
    T["out.pe_long"] = sinusoidal(600, 8, 10000)
    return T, base_meta(case, base="10000", base_pe_base100="100", base_pe_long="10000",
                        layout="interleaved: pe[pos,2i]=sin(pos/base^(2i/D)), "
                               "pe[pos,2i+1]=cos(pos/base^(2i/D))",
                        shapes="pe:(7,8) pe_base100:(7,8) pe_long:(600,8)")


def case_cross_entropy(case):
    T = OrderedDict()
    logits = randn(6, 5, std=2.0)
    targets = torch.randint(0, 5, (6,))
    targets[1] = -100
    targets[4] = -100
    logits3 = randn(2, 3, 5, std=2.0)
    targets3 = torch.randint(0, 5, (2, 3))
    targets3[1, 0] = -100
    T["in.logits"] = logits
    T["in.targets"] = targets.to(torch.float64)
    T["in.logits3"] = logits3
    T["in.targets3"] = targets3.to(torch.float64)

    def ce(lg, tg, ls):
        lg = lg.clone().requires_grad_(True)
        V = lg.shape[-1]
        loss = F.cross_entropy(lg.reshape(-1, V), tg.reshape(-1), ignore_index=-100,
                               reduction="mean", label_smoothing=ls)
        loss.backward()
        return loss, lg.grad

    loss, g = ce(logits, targets, 0.1)
    loss_ns, g_ns = ce(logits, targets, 0.0)
    loss3, g3 = ce(logits3, targets3, 0.1)
    # independent check of the smoothed loss formula
    lp = torch.log_softmax(logits, -1)
    keep = targets != -100
    nll = -lp[keep].gather(1, targets[keep].view(-1, 1)).squeeze(1)
    smooth = -lp[keep].mean(-1)
    manual = ((1 - 0.1) * nll + 0.1 * smooth).mean()
    assert torch.allclose(manual, loss, atol=1e-13), (manual, loss)
    T["out.loss"] = loss
    T["grad.logits"] = g
    T["out.loss_nosmooth"] = loss_ns
    T["grad.logits_nosmooth"] = g_ns
    T["out.loss3"] = loss3
    T["grad.logits3"] = g3
    return T, base_meta(case, ignore_index="-100", label_smoothing="0.1",
                        label_smoothing_nosmooth="0", reduction="mean over non-ignored",
                        class_dim="last",
                        note="grad.* is the gradient of the scalar loss itself; "
                             "loss = (1-ls)*nll + ls*mean_c(-log p_c), averaged over "
                             "non-ignored targets")


# Rotary position embeddings as transformers' modeling_llama.py computes
# them (LlamaRotaryEmbedding with the default rope_type, attention_scaling
# 1, and apply_rotary_pos_emb), re-implemented with its names since the
# Debian torch has no transformers.


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def llama_rotary_embedding(x, position_ids, dim, base, dtype):
    """LlamaRotaryEmbedding.forward: cos, sin (B, T, dim) in x's dtype,
    computed in dtype (transformers: always float32)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype) / dim))
    inv_freq_expanded = inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)
    position_ids_expanded = position_ids[:, None, :].to(dtype)
    freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def case_rotary(case):
    B, H, KVH, T_, D, base = 2, 4, 2, 5, 8, 10000.0
    position_ids = torch.tensor([[0, 1, 2, 3, 4], [517, 518, 519, 520, 4000]])
    q = randn(B, H, T_, D).requires_grad_(True)
    k = randn(B, KVH, T_, D).requires_grad_(True)
    cos, sin = llama_rotary_embedding(q, position_ids, D, base, torch.float64)
    q_embed, k_embed = apply_rotary_pos_emb(q, k, cos, sin)
    r_q, r_k = torch.randn(q_embed.shape), torch.randn(k_embed.shape)
    ((q_embed * r_q).sum() + (k_embed * r_k).sum()).backward()
    # transformers' own precision: float32 inputs, float32 cos and sin.
    q32, k32 = q.detach().float(), k.detach().float()
    cos32, sin32 = llama_rotary_embedding(q32, position_ids, D, base, torch.float32)
    q_embed32, k_embed32 = apply_rotary_pos_emb(q32, k32, cos32, sin32)
    T = OrderedDict()
    T["in.q"] = q.detach().reshape(B * H, T_, D)
    T["in.k"] = k.detach().reshape(B * KVH, T_, D)
    T["in.position_ids"] = position_ids.to(torch.float64)
    T["in.r_q"] = r_q.reshape(B * H, T_, D)
    T["in.r_k"] = r_k.reshape(B * KVH, T_, D)
    T["out.q"] = q_embed.detach().reshape(B * H, T_, D)
    T["out.k"] = k_embed.detach().reshape(B * KVH, T_, D)
    T["out.q32"] = q_embed32.reshape(B * H, T_, D).to(torch.float64)
    T["out.k32"] = k_embed32.reshape(B * KVH, T_, D).to(torch.float64)
    T["grad.q"] = q.grad.reshape(B * H, T_, D)
    T["grad.k"] = k.grad.reshape(B * KVH, T_, D)
    return T, base_meta(case, base=str(base), heads=str(H), kv_heads=str(KVH),
                        layout="q, k as (B*heads, T, d_head) of (B, heads, T, d_head); out.q32, out.k32: "
                               "float32 inputs and float32 cos/sin, as transformers computes them; "
                               "grads of sum(q_embed*r_q) + sum(k_embed*r_k)")


# LLaMA's parts as transformers' modeling_llama.py writes them (LlamaRMSNorm,
# LlamaMLP, repeat_kv, LlamaAttention's eager path, LlamaDecoderLayer,
# LlamaModel, LlamaForCausalLM's lm_head), re-implemented with its names.
# One deliberate difference: transformers' LlamaRMSNorm and eager softmax
# compute in float32 whatever the input dtype; here float64 inputs stay in
# float64 (the goldens are float64), float32 ones follow transformers.


class LlamaRMSNorm(torch.nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32) if input_dtype != torch.float64 else hidden_states
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaMLP(torch.nn.Module):
    def __init__(self, hidden_size, intermediate_size, mlp_bias):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=mlp_bias)
        self.up_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=mlp_bias)
        self.down_proj = torch.nn.Linear(intermediate_size, hidden_size, bias=mlp_bias)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def load_params(module, P, prefix=""):
    """Copy P's tensors into module's parameters of the same names."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(P.get(prefix + name))


def case_rmsnorm(case, eps):
    P = Params()
    P.add("weight", 1.0 + randn(6, std=0.1))
    x = randn(2, 3, 6).requires_grad_(True)
    # the formula, on the leaf parameters (for the gradients) ...
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * P.get("weight")
    # ... is LlamaRMSNorm's in float64, and in float32 (HF's precision):
    m = LlamaRMSNorm(6, eps)
    load_params(m, P)
    with torch.no_grad():
        assert torch.allclose(m(x), y, atol=1e-14, rtol=0)
        m32 = LlamaRMSNorm(6, eps).float()
        load_params(m32, P)
        y32 = m32(x.detach().float())
    return finish_grad_case(case, P, {"x": x}, y, extra_out={"y32": y32}, grad_inputs=["x"],
                            meta=base_meta(case, eps=repr(eps), note="out.y32: LlamaRMSNorm in float32 "
                                           "(float32 input and weight)"))


def case_swiglu(case, bias):
    d, inter = 6, 10
    P = Params()
    P.linear("gate_proj.", d, inter, bias=bias)
    P.linear("up_proj.", d, inter, bias=bias)
    P.linear("down_proj.", inter, d, bias=bias)
    x = randn(2, 3, d).requires_grad_(True)
    y = linear(P, "down_proj.", F.silu(linear(P, "gate_proj.", x)) * linear(P, "up_proj.", x))
    m = LlamaMLP(d, inter, bias)
    load_params(m, P)
    with torch.no_grad():
        assert torch.allclose(m(x), y, atol=1e-14, rtol=0)
    return finish_grad_case(case, P, {"x": x}, y, grad_inputs=["x"],
                            meta=base_meta(case, hidden_size=d, intermediate_size=inter, mlp_bias=bias))


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.head_dim = c["head_dim"]
        self.num_heads, self.num_key_value_heads = c["num_attention_heads"], c["num_key_value_heads"]
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        b = c["attention_bias"]
        self.q_proj = torch.nn.Linear(c["hidden_size"], self.num_heads * self.head_dim, bias=b)
        self.k_proj = torch.nn.Linear(c["hidden_size"], self.num_key_value_heads * self.head_dim, bias=b)
        self.v_proj = torch.nn.Linear(c["hidden_size"], self.num_key_value_heads * self.head_dim, bias=b)
        self.o_proj = torch.nn.Linear(self.num_heads * self.head_dim, c["hidden_size"], bias=b)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        # eager_attention_forward
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = torch.softmax(attn_weights, dim=-1, dtype=torch.float32 if query_states.dtype != torch.float64
                                     else torch.float64).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        return self.o_proj(attn_output.reshape(*input_shape, -1).contiguous())


class LlamaDecoderLayer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c["hidden_size"], c["intermediate_size"], c["mlp_bias"])
        self.input_layernorm = LlamaRMSNorm(c["hidden_size"], eps=c["rms_norm_eps"])
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden_size"], eps=c["rms_norm_eps"])

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class LlamaModel(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = torch.nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(c["hidden_size"], eps=c["rms_norm_eps"])

    def forward(self, input_ids, attention_mask, position_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        B, T = input_ids.shape
        # the 4D causal mask of _prepare_4d_causal_attention_mask: min where
        # a key is in the future or padding
        minv = torch.finfo(inputs_embeds.dtype).min
        causal = torch.triu(torch.full((T, T), minv), diagonal=1)[None, None]
        pad = (1.0 - attention_mask[:, None, None, :].to(inputs_embeds.dtype)) * minv
        mask = (causal + pad).clamp(min=minv)
        position_embeddings = llama_rotary_embedding(inputs_embeds, position_ids, self.c["head_dim"],
                                                     self.c["rope_theta"], torch.float64)
        hidden_states = inputs_embeds
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class LlamaForCausalLM(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = torch.nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def forward(self, input_ids, attention_mask):
        # position ids as generate() derives them from the attention mask
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        return self.lm_head(self.model(input_ids, attention_mask, position_ids))


LLAMA_TINY = OrderedDict(vocab_size=24, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=4, rms_norm_eps=1e-6,
                         rope_theta=10000.0, attention_bias=False, mlp_bias=False, tie_word_embeddings=False)


def case_llama_tiny(case):
    c = LLAMA_TINY
    m = LlamaForCausalLM(c)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                p.copy_(1.0 + randn(*p.shape, std=0.1))
            else:
                p.copy_(randn(*p.shape, std=0.4))
    B, T, new = 2, 6, 5
    input_ids = torch.randint(0, c["vocab_size"], (B, T))
    attention_mask = torch.ones(B, T, dtype=torch.long)
    attention_mask[1, :2] = 0  # row 1 is left-padded: 4 tokens
    input_ids[1, :2] = 0
    with torch.no_grad():
        logits = m(input_ids, attention_mask) * attention_mask[:, :, None]
        # greedy generation, recomputing the whole left-padded batch each step
        ids, am = input_ids.clone(), attention_mask.clone()
        for _ in range(new):
            nxt = m(ids, am)[:, -1].argmax(-1)
            ids = torch.cat([ids, nxt[:, None]], 1)
            am = torch.cat([am, torch.ones(B, 1, dtype=am.dtype)], 1)
    T_ = OrderedDict((k, v.detach()) for k, v in m.named_parameters())
    T_["in.input_ids"] = input_ids.to(torch.float64)
    T_["in.attention_mask"] = attention_mask.to(torch.float64)
    T_["out.logits"] = logits
    T_["out.generated"] = ids[:, T:].to(torch.float64)
    return T_, base_meta(case, config=dict(c), new_tokens=new,
                         note="LlamaForCausalLM (eager attention) on a left-padded batch, position ids "
                              "from the attention mask as generate() derives them; out.logits is zero at "
                              "padding; out.generated: greedy tokens, full recompute each step")


CASES = OrderedDict([
    ("linear", lambda c: case_linear(c, True)),
    ("linear_nobias", lambda c: case_linear(c, False)),
    ("layernorm", lambda c: case_layernorm(c, 1e-5, True)),
    ("layernorm_nobias", lambda c: case_layernorm(c, 1e-6, False)),
    ("gelu", case_gelu),
    ("mha_causal", lambda c: case_mha(c, True, None)),
    ("mha_padding", lambda c: case_mha(c, False, "pad")),
    ("mha_both", lambda c: case_mha(c, True, "pad")),
    ("mha_cross", case_mha_cross),
    ("encoder_post", lambda c: case_encoder(c, "post")),
    ("encoder_pre", lambda c: case_encoder(c, "pre")),
    ("decoder_post", lambda c: case_decoder(c, "post")),
    ("decoder_pre", lambda c: case_decoder(c, "pre")),
    ("sinusoidal", case_sinusoidal),
    ("cross_entropy", case_cross_entropy),
    ("rotary", case_rotary),
    ("rmsnorm", lambda c: case_rmsnorm(c, 1e-6)),
    ("swiglu", lambda c: case_swiglu(c, False)),
    ("swiglu_bias", lambda c: case_swiglu(c, True)),
    ("llama_tiny", case_llama_tiny),
])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.normpath(os.path.join(here, "..", "..", "layers", "testdata", "golden"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=default_out)
    ap.add_argument("cases", nargs="*", help="subset of cases (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = args.cases or list(CASES)
    for name in names:
        torch.manual_seed(seed_for(name))
        tensors, meta = CASES[name](name)
        meta["seed"] = str(seed_for(name))
        for k, v in tensors.items():
            assert v is not None, "%s: %s is None" % (name, k)
            assert torch.isfinite(v).all(), "%s: %s not finite" % (name, k)
        path = os.path.join(args.out, name + ".safetensors")
        write_f64(path, tensors, meta)
        # self-check: read back and compare bit-for-bit
        back, bmeta = read_safetensors(path)
        assert list(back) == list(tensors), "order mismatch"
        for k, v in tensors.items():
            assert torch.equal(back[k], v.detach()), "%s: %s roundtrip" % (name, k)
        assert bmeta == dict(meta)
        size = os.path.getsize(path)
        assert size < 50 * 1024, "%s too large (%d bytes)" % (path, size)
        print("%-28s %6d bytes  %2d tensors  %s" % (
            name + ".safetensors", size, len(tensors),
            " ".join("%s%s" % (k, list(v.shape)) for k, v in tensors.items()
                     if k.startswith("out."))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
