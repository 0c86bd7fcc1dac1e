"""A model_type kvplan has no rule or class defaults for is never sized as a Llama: without the fields kvplan needs it
is refused naming them (exit 2); with them it is sized, and a note names the model_type."""

from __future__ import annotations

import re
from typing import Any

import pytest

import kvplan
from kvplan.config import bundled_index, load_model
from kvplan.config.hf import normalize
from kvplan.errors import ConfigError

BASE = {"model_type": "foo_lm", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512}


@pytest.mark.parametrize(("drop", "named"), [
    ((), "num_key_value_heads"),  # an unknown family's KV heads are not assumed to be its query heads
    (("hidden_size",), "num_key_value_heads, head_dim (or hidden_size)"),
])
def test_unknown_model_type_without_the_fields_names_them(drop: tuple[str, ...], named: str) -> None:
    doc = {k: v for k, v in BASE.items() if k not in drop}
    with pytest.raises(ConfigError, match=re.escape(f"model_type 'foo_lm' is not one kvplan knows, and the config does "
                                                    f"not name {named}; kvplan does not guess them")):
        normalize(doc, model_id="foo", source="foo")


def test_unknown_model_type_without_a_head_count_names_it() -> None:
    with pytest.raises(ConfigError, match="'num_attention_heads': field required"):
        normalize({k: v for k, v in BASE.items() if k != "num_attention_heads"}, model_id="foo", source="foo")


def test_unknown_model_type_with_the_fields_is_sized_with_a_note(run_cli: Any, tmp_path: Any) -> None:
    # 4 layers × 2 KV heads × (64 + 64) × 2 B = 2,048 B per token (head_dim = 512 / 8)
    m = normalize({**BASE, "num_key_value_heads": 2}, model_id="foo", source="foo")
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 2_048
    assert any("model_type 'foo_lm' is not an architecture kvplan knows" in n for n in m.notes)
    (tmp_path / "config.json").write_text('{"model_type": "foo_lm", "num_hidden_layers": 4, "num_attention_heads": 8, '
                                          '"hidden_size": 512}')
    code, out, err = run_cli("size", str(tmp_path / "config.json"))
    assert (code, out) == (2, "") and "num_key_value_heads" in err


def test_known_families_have_no_such_note() -> None:
    for model_id in bundled_index():
        try:
            notes = load_model(model_id).notes
        except ConfigError:
            continue
        assert not any("is not an architecture kvplan knows" in n for n in notes), model_id
