"""SGLang's rules for what shares the GPU with its token pool: a speculative draft, LoRA buffers, a vision
tower. The release row (``SglangRelease``) says which rule applies; the package plans with them.

- Draft (EAGLE, EAGLE-3, NEXTN/MTP, STANDALONE, NGRAM): the draft worker is built after the target's pool and
  reuses its token count for a pool of its own. ``spec_rule`` by release:
  ``headroom`` (0.4.3-0.5.6): the pool is sized for the target alone, then target and draft share ``N + reqs ×
  (steps × topk + draft tokens) + 100`` slots with ``reqs = min(max(int(N / context_len × 512), 2048), 4096)``
  (0.4.3.post4 ``model_executor/model_runner.py:672-692``, 0.5.6.post2 :1692-1713; EAGLE and STANDALONE only);
  ``reuse`` (0.5.7-0.5.13): no headroom, the draft reuses N (``model_runner_kv_cache_mixin.py``);
  ``cell`` (0.5.14 on): ``cell += int(cell × draft layers / target layers)``, the draft's per-layer KV assumed
  the target's (0.5.14 ``model_executor/pool_configurator.py:108-233``, 0.5.23 :259-314; draft layers:
  ``num_nextn_predict_layers`` or the draft config's layers). Before 0.5.14 the default fraction reserves memory
  for the draft instead (``fraction.spec_reserve_mib``). kvplan drafts a chain: steps K, top-k 1, K + 1 draft tokens.
- LoRA: ``max_loras_per_batch`` (8) slots of A and B buffers per target module and layer
  (``lora/mem_pool.py:424-573``), allocated after the weights and before the pool is sized
  (``model_runner.py:715-733``): they count like weights.
- Vision tower: the default mem_fraction_static is scaled by ``0.95 × clamp(1 − 0.1 × (L·h² / (24 ·
  1024²) − 1), 0.8, 1.05)`` (the tower's layers L and width h against ViT-L/14; ``server_args.py:1952-1992``
  in 0.4.9.post6, :2513-2550 in 0.5.2, ``arg_groups/memory_hook.py:417-462`` in 0.5.23).
"""

from __future__ import annotations

from kvplan.config.defaults import class_defaults, sub_config_type
from kvplan.config.model import ModelConfig
from kvplan.engines.base import LoraRule, Request
from kvplan.engines.sglang.releases import SglangRelease
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout
from kvplan.formulas.per_token import kv_bytes_per_token

MAX_LORAS_PER_BATCH, DEFAULT_LORA_RANK = 8, 16  # SGLang's default slots; kvplan's rank when none is given (vLLM's)
HEADROOM_TOKENS = 100  # 0.5.2 model_runner: "buffer"


def check(rel: SglangRelease, req: Request) -> None:
    if req.draft is not None and req.draft.method not in rel.spec_methods:
        takes = ", ".join(rel.spec_methods) or "none kvplan follows"
        raise InputError(f"{rel.label} takes speculative_method {takes}, not {req.draft.method}",
                         arg="speculative_method")


def vlm_factor(model: ModelConfig) -> float:
    """The default fraction's scale for a vision tower (1 without one). Kimi-K2.5's MoonViT names its depth and width
    ``vt_num_hidden_layers`` / ``vt_hidden_size``: its 27 × 1,152 give 0.909736328125, and SGLang 0.5.8.post1 logged
    mem_fraction_static 0.8260405859375 = 0.908 × that factor on MI355X (tests/data/logs/sglang-v058post1-*)."""
    config = model.raw.get("vision_config")
    if not isinstance(config, dict):
        return 1.0
    kind = config.get("model_type") or sub_config_type(model.model_type, "vision_config")
    fields = {**class_defaults(kind), **config}
    layers = int(fields.get("num_hidden_layers") or fields.get("vt_num_hidden_layers") or 24)
    width = int(fields.get("hidden_size") or fields.get("vt_hidden_size") or 1024)
    ratio = layers * width**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def lora_rule(req: Request) -> LoraRule | None:
    s = req.settings
    if s.max_lora_rank is None and s.max_loras is None:
        return None
    return LoraRule(slots=s.max_loras or MAX_LORAS_PER_BATCH, rank=s.max_lora_rank or DEFAULT_LORA_RANK,
                    target_modules=s.lora_target_modules, embeddings=False, extra_vocab=0, vocab_padding=1,
                    host_adapters=0, source="SGLang lora/mem_pool.py:424-573 (max_loras_per_batch × A and B buffers)")


def _kv_layers(layout: Layout, stage: int) -> int:
    return sum(g.stage_layers[stage] for g in layout.groups if g.bytes_per_token_per_layer)


def cells(req: Request, rel: SglangRelease, layout: Layout, cells: list[int]) -> list[int]:
    """0.5.14 on: the last stage's cell grows by the draft's layers at the target's per-layer size."""
    if req.draft is None or rel.spec_rule != "cell" or not req.draft.num_layers:
        return cells
    last = len(cells) - 1
    target_layers = _kv_layers(layout, last)
    return [*cells[:last], cells[last] + int(cells[last] * req.draft.num_layers / target_layers)]


def headroom(req: Request, rel: SglangRelease, tokens: int, lines: list[str]) -> int:
    """0.4.3-0.5.6: N + reqs × (steps × topk + draft tokens) + 100 slots for draft and verify tokens."""
    if req.draft is None or rel.spec_rule != "headroom" or req.draft.method == "ngram":
        return tokens
    k = req.draft.num_speculative_tokens
    reqs = min(max(int(tokens / req.max_model_len * 512), 2048), 4096)
    grown = tokens + reqs * (k * 1 + (k + 1)) + HEADROOM_TOKENS
    lines.append(f"speculative headroom: N + max_num_reqs {reqs:,} × (steps {k} × topk 1 + draft tokens {k + 1}) + "
                 f"{HEADROOM_TOKENS} = {grown:,}")
    return grown


def lookahead_tokens(req: Request) -> int:
    """Slots a running request may hold at once for draft and verify tokens (steps × topk + draft tokens)."""
    return 2 * req.draft.num_speculative_tokens + 1 if req.draft and req.draft.method != "ngram" else 0


def notes(req: Request, rel: SglangRelease, layout: Layout, tokens: int) -> tuple[str, ...]:
    d = req.draft
    if d is None or not d.num_layers:
        return ()
    real = sum(kv_bytes_per_token(s, layout.kv_dtype) for s in d.specs_per_gpu)
    where = ("inside the pool's cell (sized at the target's per-layer KV)" if rel.spec_rule == "cell" else
             "outside the fraction (the default fraction's draft reserve)" if any(rel.spec_reserve_mib) else
             "outside the fraction (this release's default reserves nothing for it)")
    return (f"speculative ({d.method}, K={d.num_speculative_tokens}): the draft pool holds the same {tokens:,} "
            f"tokens at {real:,} B per token per GPU, {tokens * real:,} B, {where}; its weights load after the pool "
            "and come out of the memory the fraction leaves",)
