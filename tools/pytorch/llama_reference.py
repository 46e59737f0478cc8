#!/usr/bin/env python3
"""Golden outputs of LLaMA-style decoders for models/llama's parity tests.

Re-implements, with transformers' module and parameter names, what
modeling_llama.py and modeling_qwen2.py compute (LlamaRMSNorm,
LlamaRotaryEmbedding with the "default" and "llama3" rope types of
modeling_rope_utils.py, apply_rotary_pos_emb, repeat_kv, LlamaAttention's
eager path, LlamaMLP, LlamaDecoderLayer, LlamaModel, LlamaForCausalLM,
LlamaForSequenceClassification; Qwen2's q/k/v biases), since the Debian
torch 1.13 has no transformers. Everything runs in float64 (transformers
computes RMSNorm, softmax and the rotary tables in float32 whatever the
model's dtype; the goldens are float64, so here float64 stays float64).

For each case it writes models/llama/testdata/parity/<case>/ with a
config.json as transformers writes one, model.safetensors (F32 weights, as
checkpoints hold them; the float64 reference runs on their exact values) and
golden.safetensors (F64):

  in.input_ids, in.attention_mask   a left-padded batch (B, T)
  out.logits                        LlamaForCausalLM's logits (B, T, V),
                                    position ids from the attention mask as
                                    generate() derives them; 0 at padding
  out.generated                     greedy tokens (B, new), recomputing the
                                    whole left-padded batch each step
  [llama_gqa only]
  in.labels, out.loss, grad.<name>  the causal LM loss of labels (-100 at
                                    padding and at a left-padded row's
                                    first token) and its gradient for
                                    every parameter
  score.weight, in.cls_ids,         LlamaForSequenceClassification on a
  out.cls_logits                    right-padded batch (pad_token_id 0),
                                    pooled at the last non-pad token

    /usr/bin/python3 tools/pytorch/llama_reference.py [--out models/llama/testdata/parity]
"""

import argparse
import json
import math
import os
from collections import OrderedDict

import torch
import torch.nn.functional as F

from safetensors_io import write_safetensors

torch.set_default_dtype(torch.float64)


# modeling_rope_utils.py


def _compute_default_rope_parameters(config, dtype=torch.float64):
    base = config["rope_theta"]
    dim = config["head_dim"]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=dtype) / dim))
    return inv_freq, 1.0


def _compute_llama3_parameters(config, dtype=torch.float64):
    inv_freq, attention_factor = _compute_default_rope_parameters(config, dtype)
    rs = config["rope_scaling"]
    factor, low_freq_factor, high_freq_factor = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old_context_len = rs["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    return inv_freq_llama, attention_factor


ROPE_INIT_FUNCTIONS = {"default": _compute_default_rope_parameters, "llama3": _compute_llama3_parameters}


# modeling_llama.py


class LlamaRMSNorm(torch.nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class LlamaRotaryEmbedding(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        rs = config.get("rope_scaling")
        self.rope_type = rs.get("rope_type", "default") if rs else "default"
        inv_freq, self.attention_scaling = ROPE_INIT_FUNCTIONS[self.rope_type](config)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].to(inv_freq_expanded.dtype)
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def biases(c):
    """Which projections carry a bias: Qwen2's q, k and v; llama's
    attention_bias (q, k, v and o) and mlp_bias; Mistral's none."""
    if c["model_type"] == "qwen2":
        return True, False, False
    if c["model_type"] == "mistral":
        return False, False, False
    return c["attention_bias"], c["attention_bias"], c["mlp_bias"]


class LlamaMLP(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        b = biases(c)[2]
        self.gate_proj = torch.nn.Linear(c["hidden_size"], c["intermediate_size"], bias=b)
        self.up_proj = torch.nn.Linear(c["hidden_size"], c["intermediate_size"], bias=b)
        self.down_proj = torch.nn.Linear(c["intermediate_size"], c["hidden_size"], bias=b)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaAttention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.head_dim = c["head_dim"]
        self.num_heads, self.num_key_value_heads = c["num_attention_heads"], c["num_key_value_heads"]
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        qkv, o, _ = biases(c)
        d = c["hidden_size"]
        self.q_proj = torch.nn.Linear(d, self.num_heads * self.head_dim, bias=qkv)
        self.k_proj = torch.nn.Linear(d, self.num_key_value_heads * self.head_dim, bias=qkv)
        self.v_proj = torch.nn.Linear(d, self.num_key_value_heads * self.head_dim, bias=qkv)
        self.o_proj = torch.nn.Linear(self.num_heads * self.head_dim, d, bias=o)

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
        attn_weights = torch.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        return self.o_proj(attn_output.reshape(*input_shape, -1).contiguous())


class LlamaDecoderLayer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
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
        self.embed_tokens = torch.nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = torch.nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(c["hidden_size"], eps=c["rms_norm_eps"])
        self.rotary_emb = LlamaRotaryEmbedding(c)

    def forward(self, input_ids, attention_mask, position_ids=None):
        inputs_embeds = self.embed_tokens(input_ids)
        B, T = input_ids.shape
        if position_ids is None:  # cache_position: 0 … T-1
            position_ids = torch.arange(T)[None].expand(B, T)
        # the 4D causal mask: min where a key is in the future or padding
        minv = torch.finfo(inputs_embeds.dtype).min
        causal = torch.triu(torch.full((T, T), minv), diagonal=1)[None, None]
        pad = (1.0 - attention_mask[:, None, None, :].to(inputs_embeds.dtype)) * minv
        mask = (causal + pad).clamp(min=minv)
        position_embeddings = self.rotary_emb(inputs_embeds, position_ids)
        hidden_states = inputs_embeds
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class LlamaForCausalLM(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = LlamaModel(c)
        self.lm_head = torch.nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids, attention_mask, labels=None):
        # position ids as generate() derives them from the attention mask
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        logits = self.lm_head(self.model(input_ids, attention_mask, position_ids))
        loss = None
        if labels is not None:  # ForCausalLMLoss: shift, mean over labels != -100
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                   ignore_index=-100)
        return logits, loss


class LlamaForSequenceClassification(torch.nn.Module):
    def __init__(self, c, num_labels):
        super().__init__()
        self.c = c
        self.model = LlamaModel(c)
        self.score = torch.nn.Linear(c["hidden_size"], num_labels, bias=False)

    def forward(self, input_ids, attention_mask):
        logits = self.score(self.model(input_ids, attention_mask))
        # the rightmost token that is not pad_token_id
        non_pad_mask = (input_ids != self.c["pad_token_id"]).to(torch.int64)
        token_indices = torch.arange(input_ids.shape[-1])
        last_non_pad_token = (token_indices * non_pad_mask).argmax(-1)
        return logits[torch.arange(input_ids.shape[0]), last_non_pad_token]


# The cases: tiny configs, as config.json writes them.

BASE = OrderedDict(vocab_size=32, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=4, hidden_act="silu",
                   max_position_embeddings=64, initializer_range=0.02, rms_norm_eps=1e-6,
                   rope_theta=10000.0, rope_scaling=None, attention_bias=False, mlp_bias=False,
                   attention_dropout=0.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                   pad_token_id=0)


def case_config(model_type, **kw):
    c = OrderedDict(BASE)
    c["model_type"] = model_type
    c.update(kw)
    if model_type == "qwen2":  # Qwen2Config has neither key; it has sliding_window (off)
        del c["attention_bias"], c["mlp_bias"]
        c.update(use_sliding_window=False, sliding_window=None, max_window_layers=2)
    return c


CASES = OrderedDict([
    # grouped-query attention, untied head, no biases
    ("llama_gqa", case_config("llama")),
    # multi-head attention, tied embeddings, llama's attention_bias and mlp_bias
    ("llama_mha_bias", case_config("llama", num_key_value_heads=4, tie_word_embeddings=True,
                                   attention_bias=True, mlp_bias=True)),
    # Qwen2: q/k/v biases, tied, GQA of 4:1, rope_theta 1e6
    ("qwen2", case_config("qwen2", num_key_value_heads=1, tie_word_embeddings=True, rope_theta=1e6)),
    # Llama 3.1's frequency scaling, head_dim 8 (not hidden/heads): kept,
    # interpolated and divided frequencies at theta 100
    ("llama3", case_config("llama", head_dim=8, rope_theta=100.0,
                           rope_scaling=OrderedDict(rope_type="llama3", factor=4.0, low_freq_factor=1.0,
                                                    high_freq_factor=4.0, original_max_position_embeddings=32))),
])

ARCH = {"llama": "Llama", "qwen2": "Qwen2", "mistral": "Mistral"}


def init_params(m, gen):
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                v = 1.0 + 0.1 * torch.randn(p.shape, generator=gen)
            else:
                v = 0.4 * torch.randn(p.shape, generator=gen)
            p.copy_(v.float().double())  # exactly a float32 checkpoint's values


def run_case(name, c, out, seed):
    gen = torch.Generator().manual_seed(seed)
    m = LlamaForCausalLM(c)
    init_params(m, gen)
    B, T, new = 2, 6, 6
    input_ids = torch.randint(1, c["vocab_size"], (B, T), generator=gen)
    attention_mask = torch.ones(B, T, dtype=torch.long)
    attention_mask[1, :2] = 0  # row 1 is left-padded: 4 tokens
    input_ids[1, :2] = c["pad_token_id"]
    G = OrderedDict()
    G["in.input_ids"] = input_ids.to(torch.float64)
    G["in.attention_mask"] = attention_mask.to(torch.float64)
    with torch.no_grad():
        logits, _ = m(input_ids, attention_mask)
        G["out.logits"] = logits * attention_mask[:, :, None]
        ids, am = input_ids.clone(), attention_mask.clone()
        for _ in range(new):
            nxt = m(ids, am)[0][:, -1].argmax(-1)
            ids = torch.cat([ids, nxt[:, None]], 1)
            am = torch.cat([am, torch.ones(B, 1, dtype=am.dtype)], 1)
        G["out.generated"] = ids[:, T:].to(torch.float64)
    if name == "llama_gqa":
        labels = input_ids.masked_fill(attention_mask == 0, -100)
        # nor is a left-padded row's first token a target: it would be
        # predicted from a padding position, whose output transformers
        # computes from a fully masked row (uniform over every key)
        labels[1, 2] = -100
        m.zero_grad()
        _, loss = m(input_ids, attention_mask, labels)
        loss.backward()
        G["in.labels"] = labels.to(torch.float64)
        G["out.loss"] = loss.detach().reshape(1)
        for pname, p in m.named_parameters():
            G["grad." + pname] = p.grad.detach().clone()
        cls = LlamaForSequenceClassification(c, 3)
        cls.model.load_state_dict(m.model.state_dict())
        with torch.no_grad():
            cls.score.weight.copy_((0.4 * torch.randn(cls.score.weight.shape, generator=gen)).float().double())
            cls_ids = torch.randint(1, c["vocab_size"], (3, 5), generator=gen)
            cls_ids[1, 3:] = c["pad_token_id"]  # right-padded: 3 tokens
            cls_ids[2, 1:] = c["pad_token_id"]  # 1 token
            cls_mask = (cls_ids != c["pad_token_id"]).to(torch.long)
            G["score.weight"] = cls.score.weight.detach().clone()
            G["in.cls_ids"] = cls_ids.to(torch.float64)
            G["out.cls_logits"] = cls(cls_ids, cls_mask)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    cfg = OrderedDict(c)
    cfg["architectures"] = [ARCH[c["model_type"]] + "ForCausalLM"]
    cfg["torch_dtype"] = "float32"
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    state = OrderedDict((k, v.detach().float()) for k, v in m.state_dict().items()
                        if not (c["tie_word_embeddings"] and k == "lm_head.weight"))
    write_safetensors(os.path.join(d, "model.safetensors"), state, {"format": "pt"})
    write_safetensors(os.path.join(d, "golden.safetensors"), G,
                      {"case": name, "new_tokens": str(new),
                       "note": "float64 reference; logits 0 at padding; generated: greedy, full recompute"})
    print(name, "greedy", ids[:, T:].tolist())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "models", "llama", "testdata", "parity"))
    a = ap.parse_args()
    for i, (name, c) in enumerate(CASES.items()):
        run_case(name, c, a.out, 37 + i)


if __name__ == "__main__":
    main()
