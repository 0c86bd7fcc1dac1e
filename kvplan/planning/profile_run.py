"""The activation peak of an engine's start-up profile run, from the model's dimensions.

What is alive at the peak of one decoder layer (``A_fwd``) or at the dummy sampler (``A_smp``), per
GPU of the last PP stage (other stages run no sampler); the engine's ``ProfileRun`` says how many
tokens and rows, and which tensors outlive the forward. ``s`` = activation bytes (2), ``T`` tokens,
``R`` sampler rows, ``V`` vocab, ``h`` hidden, ``I`` intermediate, ``q``/``kv`` the attention widths.

- eager forward: the layer loop keeps the previous layer's output, the residual and the normed input
  alive beside the MLP intermediates: ``s·T·(3h + 3·I/tp)`` (Llama-style MLPs free ``gate_up`` after the
  activation); ``+ s·T·h`` where ``gate_up`` is held through ``down_proj`` (Qwen2/Qwen3/DeepSeek
  ``MLP.forward``). Calibrated to ±0.02 GiB on five vLLM V0 logs whose peak is the forward.
- compiled forward (vLLM V1 ≥ 0.9): the inputs of a piecewise graph (attention output ``q/tp`` and the
  residual) stay alive: ``3h`` becomes ``2h + q/tp`` (an approximation: Inductor lifetimes are not derived).
- MoE layers (Triton ``fused_moe``): ``s·T·(3h + k·max(2·Ie/tp, h) + k·Ie/tp + h) + T·(E·s + 12·k)``
  (workspaces ``cache13``/``cache2`` over ``min(T, 32768)`` tokens, the output, router logits and
  top-k ids/weights), with the shared experts' output alive too.
- sampler: ``s·T·h`` (the full hidden states, when kept) ``+ copies·s·R·h + R·V·b``, b the bytes per
  logit of the sampler's path (sort 38, FlashInfer ≈ 15, vLLM's Triton top-k/top-p 14, Model Runner V2's default
  pass 6 or 2), plus what the path keeps allocated (the Triton kernel's ``min(SMs, R) × V`` fp32 rows).
"""

from __future__ import annotations

from kvplan.config.model import ModelConfig
from kvplan.dtypes import element_bits
from kvplan.engines.base import BudgetTerm, ProfileRun
from kvplan.records import Record
from kvplan.units import cdiv, format_gib

FUSED_MOE_CHUNK_TOKENS = 32768  # vLLM VLLM_FUSED_MOE_CHUNK_SIZE
# model_type whose MLP keeps gate_up alive through down_proj (`gate_up, _ = self.gate_up_proj(x)`).
KEEPS_GATE_UP = frozenset({"qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next", "deepseek_v2", "deepseek_v3"})


class Dims(Record):
    """What the activation formulas read from a config (per model, unsharded)."""

    hidden: int
    intermediate: int
    moe_intermediate: int
    num_experts: int
    experts_per_token: int
    shared_intermediate: int  # shared experts' width (0: none)
    has_dense_layers: bool  # dense MLP layers exist beside the MoE ones (or the model is dense)
    q_width: int
    kv_width: int
    vocab: int
    act_bytes: int
    keeps_gate_up: bool


def dims(model: ModelConfig) -> Dims:
    """The model's widths, read once per config instance (fit asks for them in every layout it tries)."""
    found = model.__dict__.get("_profile_dims")
    if not isinstance(found, Dims):
        found = _dims(model)
        object.__setattr__(model, "_profile_dims", found)
    return found


def _dims(model: ModelConfig) -> Dims:
    h = model.hidden_size
    inter = int(model.field("intermediate_size") or 4 * h)
    moe = int(model.field("moe_intermediate_size") or inter)
    experts = int(model.field("num_experts") or 0)
    shared = int(model.field("num_shared_experts") or 0) * moe + int(model.field("shared_expert_intermediate_size") or 0)
    if model.is_mla:
        q = model.num_attention_heads * ((model.qk_nope_head_dim or 0) + (model.qk_rope_head_dim or 0))
        kv = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
    else:
        q, kv = model.num_attention_heads * model.head_dim, model.num_kv_heads * model.head_dim
    return Dims(hidden=h, intermediate=inter, moe_intermediate=moe, num_experts=experts,
                experts_per_token=int(model.field("num_experts_per_tok") or 0), shared_intermediate=shared,
                has_dense_layers=not experts or bool(model.field("first_k_dense_replace")), q_width=q, kv_width=kv,
                vocab=int(model.field("vocab_size") or 0), act_bytes=element_bits(model.dtype) // 8,
                keeps_gate_up=model.model_type in KEEPS_GATE_UP)


def _moe_peak(d: Dims, tokens: int, tp: int, base: int) -> int:
    """fused_moe: workspaces over min(T, chunk) tokens, output, router logits and top-k ids/weights."""
    s, k, ie = d.act_bytes, d.experts_per_token, cdiv(d.moe_intermediate, tp)
    chunk = min(tokens, FUSED_MOE_CHUNK_TOKENS)
    shared = d.hidden if d.shared_intermediate else 0
    peak = s * tokens * (base + shared + d.hidden) + s * chunk * k * (max(2 * ie, d.hidden) + ie)
    peak += tokens * (d.num_experts * s + 12 * k)
    if d.shared_intermediate:
        peak = max(peak, s * tokens * (base + 3 * cdiv(d.shared_intermediate, tp)))
    return peak


def forward_peak(d: Dims, tokens: int, tp: int, eager: bool) -> tuple[int, str]:
    """(bytes, which part of a layer) at the forward's peak, per GPU."""
    s, h = d.act_bytes, d.hidden
    base = 3 * h if eager else 2 * h + d.q_width // tp  # tensors alive across the layer
    parts = {"attention": s * tokens * (base + (d.q_width + 2 * d.kv_width) // tp + d.q_width // tp)}
    if d.has_dense_layers:
        parts["dense MLP"] = s * tokens * (base + 3 * cdiv(d.intermediate, tp) + (h if d.keeps_gate_up else 0))
    if d.num_experts:
        parts["MoE (fused_moe)"] = _moe_peak(d, tokens, tp, base)
    name = max(parts, key=lambda p: parts[p])
    return parts[name], name


def sampler_peak(d: Dims, run: ProfileRun) -> int:
    """Hidden states kept + sampled rows (and their copies) + R × V logits at the path's bytes per logit (+ the
    rejection sampler's dummy logits held while its bonus rows take the same path)."""
    s, rows = d.act_bytes, run.sampler_rows
    kept = s * run.tokens * d.hidden if run.full_hidden_at_sampler else 0
    return int(kept + run.sampled_row_copies * s * rows * d.hidden + rows * d.vocab * run.sampler_bytes_per_logit
               + run.sampler_buffer_bytes + s * run.spec_logit_rows * d.vocab)


def draft_peak(d: Dims, run: ProfileRun, tp: int) -> int:
    """The drafter's dummy forward (an MTP module or EAGLE layer, shaped like the target's): its layer peak over the
    same tokens, with the target's output (T × h) still alive and the drafter's own T × h hidden-state buffer."""
    if not run.draft_tokens:
        return 0
    forward, _ = forward_peak(d, run.draft_tokens, tp, run.eager)
    return forward + 2 * d.act_bytes * run.draft_tokens * d.hidden


def activation_term(model: ModelConfig, tp: int, run: ProfileRun, last_stage: bool,
                    encoder: tuple[int, str] | None = None) -> BudgetTerm:
    """The profile run's activation peak on one GPU: the forward's, the sampler's on the last stage, or the
    multimodal encoder's on the first (`encoder`: its peak beyond the encoder-cache term, and how it was sized)."""
    d = dims(model)
    forward, part = forward_peak(d, run.tokens, tp, run.eager)
    sampler = sampler_peak(d, run) if last_stage and run.sampler_rows else 0
    drafter = draft_peak(d, run, tp) if last_stage else 0
    mode = "eager" if run.eager else "compiled"
    kept = f" + kept buffer {format_gib(run.sampler_buffer_bytes)} GiB" if run.sampler_buffer_bytes else ""
    spec = f" + {run.spec_logit_rows:,} rejection-sampler rows" if run.spec_logit_rows else ""
    detail = (f"forward over {run.tokens:,} tokens ({mode}, {part}) {format_gib(forward)} GiB; "
              + (f"drafter forward + target output {format_gib(drafter)} GiB; " if drafter else "") + "sampler "
              + (f"{run.sampler_rows:,} rows × {d.vocab:,} vocab × {run.sampler_bytes_per_logit:g} B ({run.sampler_path})"
                 f"{kept}{spec} + hidden {format_gib(sampler)} GiB" if sampler else "not on this stage"))
    tower = encoder[0] if encoder else 0
    if encoder:
        detail = f"{encoder[1]} (its cached outputs in the encoder-cache term); {detail}"
    peak = max(forward, sampler, drafter, tower)
    name = "activation peak (encoder forward)" if peak == tower and tower > max(forward, sampler, drafter) else \
        "activation peak (sampler)" if peak == sampler and sampler > forward else \
        "activation peak (drafter forward)" if peak == drafter and drafter > forward else \
        f"activation peak (forward, {part})"
    return BudgetTerm(name=name, bytes=peak, exact=False, kind="activation", source=f"profile run: {detail}")


def penalty_state_bytes(model: ModelConfig, rows: int) -> int:
    """Model Runner V2 penalty state: output_bin_counts R×V int32 + prompt_bin_mask R×⌈V/32⌉ int32."""
    vocab = dims(model).vocab
    return rows * vocab * 4 + rows * cdiv(vocab, 32) * 4


def persistent_term(model: ModelConfig, run: ProfileRun) -> BudgetTerm | None:
    """vLLM's Model Runner V2 penalty state, where the release's budget counts it (0.27 on)."""
    if not run.persistent_rows:
        return None
    vocab = dims(model).vocab
    return BudgetTerm(name="persistent sampler buffers", bytes=penalty_state_bytes(model, run.persistent_rows),
                      exact=True, kind="persistent",
                      source=f"{run.persistent_rows:,} × {vocab:,} × 4 B + {run.persistent_rows:,} × ⌈{vocab:,}/32⌉ "
                             "× 4 B (v1/worker/gpu/sample/penalties.py output_bin_counts, prompt_bin_mask)")
