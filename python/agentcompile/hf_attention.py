"""The attention a captured Hugging Face model runs: a static KV cache written in place, read whole.

Registered with transformers as the attention implementation "agentcompile" (and a mask function that
makes no mask: the mask is built here, from positions). Each layer's call finds its caches through
`module.layer_idx` in the step that is being traced (`active_step`), writes this call's keys and values
at rows `positions` with index_copy_ (torch.export keeps that as a mutation of the cache input, which
the converter turns into an index_copy side effect on the state), and attends over every cache row
with the boolean mask `row <= position` (and `row > position - window` on sliding-window layers).
"""
from __future__ import annotations

import contextlib
import math
import threading

import torch
import torch.nn.functional as F

from .errors import CaptureError

IMPLEMENTATION = "agentcompile"
_step = threading.local()
# layer -> sliding window of every layer traced so far. Module-level on purpose: torch.export restores
# the traced module's attributes afterwards, so a record kept on the module would be lost.
windows_seen = {}


@contextlib.contextmanager
def active_step(caches, positions):
    """Makes `caches` ([k0, v0, k1, v1, ...], each [L, KV, D]) and `positions` (i32[T]) the ones the
    attention of this forward pass writes and reads."""
    _step.caches, _step.positions = caches, positions
    try:
        yield
    finally:
        _step.caches = _step.positions = None


def cache_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, sliding_window=None,
                    softcap=None, **kwargs):
    """query [1, NH, T, D], key/value [1, KV, T, D] -> ([1, T, NH, D], None), as transformers expects."""
    if kwargs.get("s_aux") is not None or kwargs.get("sinks") is not None:
        raise CaptureError("attention sinks are not supported by the capture's attention")
    if dropout:
        raise CaptureError("attention dropout is random; the capture runs the model in eval mode")
    layer = module.layer_idx
    k_cache, v_cache = _step.caches[2 * layer], _step.caches[2 * layer + 1]  # [L, KV, D]
    positions = _step.positions                                              # i32[T]
    rows = positions.long()  # index_copy_ wants int64 indices; the IR narrows them back to i32
    k_cache.index_copy_(0, rows, key[0].transpose(0, 1).to(k_cache.dtype))  # [T, KV, D]
    v_cache.index_copy_(0, rows, value[0].transpose(0, 1).to(v_cache.dtype))
    cols = torch.arange(k_cache.shape[0], dtype=torch.int32)
    mask = cols[None, :] <= positions[:, None]     # [T, L]
    if sliding_window is not None:
        mask = mask & (cols[None, :] > positions[:, None] - sliding_window)
        windows_seen[layer] = sliding_window
    if softcap is not None:
        out = _softcapped_attention(query, k_cache, v_cache, mask, scaling, softcap)
    else:
        keys = k_cache.transpose(0, 1).unsqueeze(0)    # [1, KV, L, D]
        values = v_cache.transpose(0, 1).unsqueeze(0)  # [1, KV, L, D]
        out = F.scaled_dot_product_attention(query, keys, values, attn_mask=mask[None, None], scale=scaling,
                                             enable_gqa=True)  # [1, NH, T, D]
    return out.transpose(1, 2).contiguous(), None


def _softcapped_attention(query, k_cache, v_cache, mask, scaling, softcap):
    # SDPA has no logit soft-capping, so these layers spell attention out: scores capped as
    # tanh(s / c) * c, masked, softmax in f32, weighted sum. GQA repeats each kv head in the cache's
    # [L, KV, D] layout, where the merged heads stay static (merging into L would not be one IR dim).
    rows, kv_heads, head_dim = k_cache.shape
    repeat = query.shape[1] // kv_heads

    def heads(cache):  # [L, KV, D] -> [1, NH, L, D]
        cache = cache[:, :, None, :].expand(rows, kv_heads, repeat, head_dim).reshape(rows, kv_heads * repeat, head_dim)
        return cache.transpose(0, 1).unsqueeze(0)
    scale = scaling if scaling is not None else 1.0 / math.sqrt(head_dim)
    scores = torch.matmul(query, heads(k_cache).transpose(-1, -2)) * scale  # [1, NH, T, L]
    scores = torch.tanh(scores / softcap) * softcap
    scores = scores.masked_fill(~mask[None, None], float("-inf"))
    probs = torch.softmax(scores.float(), dim=-1).to(query.dtype)
    return torch.matmul(probs, heads(v_cache))


def _no_mask(*args, **kwargs):
    return None


def register() -> None:
    """Makes "agentcompile" an attention implementation transformers accepts (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface
    AttentionInterface.register(IMPLEMENTATION, cache_attention)
    AttentionMaskInterface.register(IMPLEMENTATION, _no_mask)
