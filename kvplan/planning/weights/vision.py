"""Vision towers of multimodal checkpoints (Gemma-3's SigLIP) and their projectors, as weight parts.

Engines load the tower with the language model (vLLM builds Gemma3ForConditionalGeneration whole),
so its weights take GPU memory on the first PP stage. Tower tensors stay in the model dtype whatever
the language model's quantization (``is_linear`` is False). TP: vLLM's SigLIP uses QKV/column/row
parallel linears, so q/k/v/fc1 split by rows and out_proj/fc2 by columns; patch and position
embeddings, layer norms and Gemma-3's projector are counted as replicated.

A vision_config of a type not listed in TOWERS is not counted; ``vision_note`` says so. Keys the
vision_config leaves out take its class's defaults (``kvplan.config.defaults``); a vision_config
without a model_type is its wrapper's default vision sub-config.
"""

from __future__ import annotations

from typing import Any

from kvplan.config.defaults import class_defaults, sub_config_type
from kvplan.config.model import ModelConfig
from kvplan.planning.weights.part import Part

# vision_config model_types whose layout kvplan knows. Qwen3.5's vision_config carries its wrapper's model_type.
TOWERS = ("siglip_vision_model", "qwen3_5", "qwen3_5_moe")
QWEN_VIT_FIELDS = ("depth", "hidden_size", "intermediate_size", "in_channels", "patch_size", "temporal_patch_size",
                   "num_position_embeddings", "spatial_merge_size", "out_hidden_size")
VISION_FIELDS = ("hidden_size", "intermediate_size", "num_hidden_layers", "image_size", "patch_size", "num_channels",
                 "vision_use_head")  # the keys read here (tools/class_defaults.py records their defaults)
# Text model_type -> the multimodal projector that maps vision features into the text width.
PROJECTORS: dict[str, str] = {
    "gemma3_text": "gemma3",  # mm_input_projection (vision hidden -> text hidden) + mm_soft_emb_norm
    "gemma3": "gemma3",  # the same, when the text_config names no model_type (Gemma3Config's default sub-config)
}


def vision_config(model: ModelConfig) -> tuple[str, dict[str, Any]] | None:
    """(model_type, fields with its class defaults) of the vision tower's config; None for text models."""
    config = model.raw.get("vision_config")
    if not isinstance(config, dict):
        return None
    kind = str(config.get("model_type") or sub_config_type(model.model_type, "vision_config") or "")
    return kind, {**class_defaults(kind), **config}


def _known(kind: str, config: dict[str, Any]) -> bool:
    """A tower kvplan can count: a listed type, with the fields its layout reads (Qwen3.5: no DeepStack mergers)."""
    if kind not in TOWERS:
        return False
    if kind == "siglip_vision_model":
        return True
    return all(isinstance(config.get(k), int) for k in QWEN_VIT_FIELDS) and not config.get("deepstack_visual_indexes")


def vision_note(model: ModelConfig) -> str | None:
    found = vision_config(model)
    if found and not _known(*found):
        return f"vision tower {found[0] or '?'!r} not counted: kvplan does not know its layout"
    return None


def _siglip_layer(h: int, inter: int) -> tuple[Part, ...]:
    split = [Part(f"vision.self_attn.{x}_proj", "vision", (h, h), "column") for x in "qkv"]
    split += [Part(f"vision.self_attn.{x}_proj.bias", "vision", (h,), "column") for x in "qkv"]
    return (*split,
            Part("vision.self_attn.out_proj", "vision", (h, h), "row"),
            Part("vision.self_attn.out_proj.bias", "vision", (h,), "replicated"),
            Part("vision.mlp.fc1", "vision", (inter, h), "column"),
            Part("vision.mlp.fc1.bias", "vision", (inter,), "column"),
            Part("vision.mlp.fc2", "vision", (h, inter), "row"),
            Part("vision.mlp.fc2.bias", "vision", (h,), "replicated"),
            Part("vision.layer_norms", "vision", (2, 2, h), "replicated"))  # 2 LayerNorms, weight + bias


def _siglip(c: dict[str, Any]) -> tuple[Part, ...]:
    h, inter, patch = int(c["hidden_size"]), int(c["intermediate_size"]), int(c["patch_size"])
    positions = (int(c["image_size"]) // patch) ** 2
    parts = [Part("vision.patch_embedding", "vision", (h, int(c["num_channels"]) * patch * patch), "replicated"),
             Part("vision.patch_embedding.bias", "vision", (h,), "replicated"),
             Part("vision.position_embedding", "vision", (positions, h), "replicated")]
    for _ in range(int(c["num_hidden_layers"])):
        parts += _siglip_layer(h, inter)
    parts.append(Part("vision.post_layernorm", "vision", (2, h), "replicated"))
    if c.get("vision_use_head"):  # attention-pooling head: probe, attention, LayerNorm, MLP
        parts += [Part("vision.head.probe", "vision", (h,), "replicated"),
                  Part("vision.head.in_proj", "vision", (3 * h, h + 1), "replicated"),  # weight + bias
                  Part("vision.head.out_proj", "vision", (h, h + 1), "replicated"),
                  Part("vision.head.layernorm", "vision", (2, h), "replicated"),
                  Part("vision.head.fc1", "vision", (inter, h + 1), "replicated"),
                  Part("vision.head.fc2", "vision", (h, inter), "replicated"),
                  Part("vision.head.fc2.bias", "vision", (h,), "replicated")]
    return tuple(parts)


def _qwen_vit(c: dict[str, Any]) -> tuple[Part, ...]:
    """Qwen3.5's ViT (Qwen3-VL's without DeepStack): a 3-D patch embedding, learned positions, pre-norm blocks
    with fused QKV, and the patch merger (spatial_merge_size² patches -> one token of the text width).
    vLLM splits qkv/fc1 by rows and proj/fc2 by columns (its default mm_encoder_tp_mode, "weights")."""
    h, inter, depth = c["hidden_size"], c["intermediate_size"], c["depth"]
    merged = h * c["spatial_merge_size"] ** 2
    patch = c["in_channels"] * c["temporal_patch_size"] * c["patch_size"] ** 2
    block = (Part("visual.attn.qkv", "vision", (3 * h, h + 1), "column"),  # weight + bias
             Part("visual.attn.proj", "vision", (h, h), "row"),
             Part("visual.attn.proj.bias", "vision", (h,), "replicated"),
             Part("visual.mlp.linear_fc1", "vision", (inter, h + 1), "column"),
             Part("visual.mlp.linear_fc2", "vision", (h, inter), "row"),
             Part("visual.mlp.linear_fc2.bias", "vision", (h,), "replicated"),
             Part("visual.norms", "vision", (2, 2, h), "replicated"))  # norm1, norm2: LayerNorm weight + bias
    return (Part("visual.patch_embed", "vision", (h, patch + 1), "replicated"),
            Part("visual.pos_embed", "vision", (c["num_position_embeddings"], h), "replicated"),
            *block * depth,
            Part("visual.merger.norm", "vision", (2, h), "replicated"),
            Part("visual.merger.linear_fc1", "vision", (merged, merged + 1), "column"),
            Part("visual.merger.linear_fc2", "vision", (c["out_hidden_size"], merged), "row"),
            Part("visual.merger.linear_fc2.bias", "vision", (c["out_hidden_size"],), "replicated"))


def vision_parts(model: ModelConfig) -> tuple[Part, ...]:
    """The tower and projector of a multimodal checkpoint; () for text-only models."""
    found = vision_config(model)
    if not found or not _known(*found):
        return ()
    if found[0] != "siglip_vision_model":
        return _qwen_vit(found[1])
    parts = _siglip(found[1])
    config = found[1]
    if PROJECTORS.get(str(model.model_type)) == "gemma3":
        v = int(config["hidden_size"])
        parts += (Part("multi_modal_projector.mm_input_projection", "vision", (model.hidden_size, v), "replicated"),
                  Part("multi_modal_projector.mm_soft_emb_norm", "vision", (v,), "replicated"))
    return parts
