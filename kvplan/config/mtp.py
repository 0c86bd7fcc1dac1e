"""A checkpoint's next-token-prediction (MTP) modules, as vLLM builds them for ``speculative_method mtp``.

vLLM rewrites the target's config into its MTP drafter's (0.33 ``config/speculative.py:711-1160``,
``hf_config_override``) and reads how many modules to build from the drafter class, not always from the config:

| family (vLLM drafter)                         | modules                                   | each module's KV layer |
|-----------------------------------------------|-------------------------------------------|------------------------|
| DeepSeek-V3/R1 ``DeepSeekMTPModel``           | ``num_nextn_predict_layers``              | the MLA layer          |
| DeepSeek-V3.2, GLM-5 ``DeepseekV32MTPModel``  | ``num_nextn_predict_layers``              | MLA + indexer          |
| DeepSeek-V4 ``DeepSeekV4MTPModel``            | ``num_nextn_predict_layers``              | the sliding latent     |
| GLM-4.5/4.6/4.7 ``Glm4MoeMTPModel``           | ``num_nextn_predict_layers``              | full attention         |
| Qwen3-Next ``Qwen3NextMTP``                   | ``num_nextn_predict_layers``, default 1   | full attention         |
| Qwen3.5/3.6 ``Qwen3_5MTP``/``Qwen3_5MoeMTP``  | ``mtp_num_hidden_layers``, default 1      | full attention         |
| MiMo-7B ``MiMoMTPModel``                      | ``num_nextn_predict_layers``              | full attention         |
| MiMo-V2-Flash ``MiMoV2MTPModel``              | 1 (``_MIMO_V2_FLASH_NUM_MTP_LAYERS``)     | sliding (SWA geometry) |
| Nemotron-H/3 ``NemotronHMTPModel``            | 1 (asserted), its pattern's blocks        | the pattern's attention|
| EXAONE-4.5 ``Exaone4_5_MTP``                  | ``num_nextn_predict_layers``              | layer_types[j]         |

Sources (vLLM 0.33): ``models/deepseek_mtp.py:152``; ``models/deepseek_v4/nvidia/mtp.py:175`` with
``models/deepseek_v4/attention.py:184-190`` (a layer past ``num_hidden_layers`` gets compress ratio 1: the sliding
latent alone); ``glm4_moe_mtp.py:136``; ``qwen3_next_mtp.py:63,92``; ``qwen3_5_mtp.py:82,121``; ``mimo_mtp.py``;
``mimo_v2_mtp.py:53-54,89-98`` (the SWA heads, window and a dense ``MiMoV2MLP``); ``nemotron_h_mtp.py:246-286``
(``mtp_hybrid_override_pattern``, one module); ``exaone4_5_mtp.py:59,75-82`` with ``exaone4.py:171-173`` (module j is
built with layer index j: ``layer_types[j]`` decides its window). ``n_predict`` (the default K, and K's divisor when
K exceeds it) is what ``hf_config_override`` sets: None for Qwen3-Next, whose K must be given.

The weights of a module, as the checkpoint stores them: an attention side like one decoder layer of the target
(``attention_layer``) and an MLP like another (``mlp``: the last layer's, the first dense layer's, or a MoE layer's),
plus the fusion projection (2h -> h) and three norms; DeepSeek-style checkpoints also store an embedding and a
head that the engines share with the target (``head``: ``shared_head`` is shared by vLLM from 0.16 only).
"""

from __future__ import annotations

from kvplan.config.model import ModelConfig
from kvplan.config.mtp_families import FAMILIES, Attention, Count, Head, Mlp, family_key
from kvplan.errors import InputError
from kvplan.records import Value
from kvplan.specs import (
    AttnSpec,
    ChunkedAttn,
    CrossAttn,
    IndexerCache,
    LayerSpec,
    MLAAttn,
    SlidingAttn,
    SlidingMLA,
    parts,
)

# Plain classes: a NamedTuple's is compiled when the module is imported (~0.3 ms each), for every capacity run, and a
# model without MTP modules never builds one.


class Family:
    """One of vLLM's MTP drafters: its class, how many modules it builds and what each repeats."""

    __slots__ = ("attention", "declared", "drafter", "head", "mlp", "modules", "template_exact")

    def __init__(self, drafter: str, modules: Count, declared: bool, attention: Attention, mlp: Mlp, head: Head,
                 template_exact: bool) -> None:
        self.drafter = drafter  # vLLM's MTP drafter class
        self.modules = modules
        self.declared = declared  # n_predict comes from the config (False: K must be given)
        self.attention = attention
        self.mlp = mlp
        self.head = head
        self.template_exact = template_exact  # the target's layers + fusion + 3 norms are every tensor of a module


class MtpModules(Value):
    """What ``speculative_method mtp`` drafts with, on one model: a value, equal and hashed by its fields."""

    __slots__ = ("attention_layers", "drafter", "head", "key", "layers", "mlp", "n_predict", "template_exact")
    FIELDS = ("key", "drafter", "layers", "n_predict", "attention_layers", "mlp", "head", "template_exact")  # in order

    def __init__(self, *, key: str, drafter: str, layers: int, n_predict: int | None,
                 attention_layers: tuple[int, ...], mlp: Mlp, head: Head, template_exact: bool) -> None:
        self.key = key  # the model_type or architecture vLLM matches (kvplan.engines.vllm.speculative: first release)
        self.drafter = drafter
        self.layers = layers  # modules vLLM builds (one KV layer each)
        self.n_predict = n_predict  # vLLM's n_predict (None: num_speculative_tokens must be given)
        self.attention_layers = attention_layers  # the target decoder layer each module's attention repeats
        self.mlp = mlp
        self.head = head
        self.template_exact = template_exact




def family(model: ModelConfig) -> tuple[str, Family] | None:
    """(the name vLLM matches, the family) of a model: its wrapper's architecture or model_type first."""
    key = family_key(model)
    return None if key is None else (key, Family(*FAMILIES[key]))


def _declared_layers(model: ModelConfig) -> int:
    """What the config declares (num_nextn_predict_layers, Qwen3.5's mtp_num_hidden_layers, MiniMax's modules)."""
    found = model.num_nextn_predict_layers or model.raw.get("num_mtp_modules") or 0
    return int(found) if isinstance(found, int) and not isinstance(found, bool) else 0


def _count(model: ModelConfig, fam: Family) -> int:
    declared = _declared_layers(model)
    if fam.modules == "one":
        if fam.drafter == "NemotronHMTPModel" and declared > 1:
            raise InputError(f"{model.model_id}: vLLM's NemotronHMTPModel builds exactly one MTP module "
                             f"(nemotron_h_mtp.py:246-249 asserts it); the config declares {declared}",
                             arg="speculative_method")
        return 0 if fam.drafter == "NemotronHMTPModel" and not declared else 1  # nemotron_h_mtp only with layers
    if fam.modules == "config_or_1" and "mtp_num_hidden_layers" not in model.raw \
            and "num_nextn_predict_layers" not in model.raw:
        return 1
    return declared


def _is_full(spec: LayerSpec) -> bool:
    """Attention over every token: full attention, MLA, or MLA with its indexer (DeepSeek-V3.2)."""
    found = parts(spec)
    return all(isinstance(p, (MLAAttn, AttnSpec, IndexerCache)) for p in found) \
        and not any(isinstance(p, (SlidingAttn, ChunkedAttn, CrossAttn)) for p in found) \
        and any(isinstance(p, (MLAAttn, AttnSpec)) for p in found)


def _wanted(rule: Attention, spec: LayerSpec) -> bool:
    if rule == "full":
        return _is_full(spec)
    if rule == "sliding":
        return isinstance(spec, SlidingAttn)
    return any(isinstance(p, SlidingMLA) for p in parts(spec))


def _attention_layer(model: ModelConfig, rule: Attention, j: int) -> int:
    specs = model.layer_specs
    if rule == "by_index":
        return j
    found = [i for i, s in enumerate(specs) if _wanted(rule, s)]
    if rule == "sliding_latent":  # the sliding latent alone (compress ratio 1) if a layer has it, else any
        found = [i for i in found if isinstance(specs[i], SlidingMLA)] or found
    if not found:
        raise InputError(f"{model.model_id} has no {rule.replace('_', ' ')} attention layer for its MTP module to "
                         "repeat", arg="speculative_method")
    return found[0]


def mtp_modules(model: ModelConfig) -> MtpModules:
    """The MTP modules vLLM builds for `model` (InputError: none, or a family vLLM has no drafter for)."""
    found = family(model)
    declared = _declared_layers(model)
    if found is None:
        has = f"declares {declared} MTP module(s) but " if declared else ""
        raise InputError(f"{model.model_id} {has}has no MTP drafter kvplan knows in vLLM (model_type "
                         f"{model.model_type}; vLLM 0.33 config/speculative.py:711-1160 names the families)"
                         if declared else f"{model.model_id} has no MTP layers (num_nextn_predict_layers is 0)",
                         arg="speculative_method")
    key, fam = found
    n = _count(model, fam)
    if n < 1:
        raise InputError(f"{model.model_id} has no MTP layers (num_nextn_predict_layers is 0)",
                         arg="speculative_method")
    stated = "mtp_num_hidden_layers" in model.raw or "num_nextn_predict_layers" in model.raw or fam.modules == "one"
    return MtpModules(key=key, drafter=fam.drafter, layers=n, n_predict=n if fam.declared and stated else None,
                      attention_layers=tuple(_attention_layer(model, fam.attention, j) for j in range(n)),
                      mlp=fam.mlp, head=fam.head, template_exact=fam.template_exact)


def declared_modules(model: ModelConfig) -> MtpModules | None:
    """The MTP modules, or None where vLLM builds none for `model` (what its weight count lists)."""
    if family(model) is None:  # mtp_modules refuses it; most models, asked once per weight count
        return None
    try:
        return mtp_modules(model)
    except InputError:
        return None
