"""SGLang releases as data: one ``SglangRelease`` row per release step where a sizing rule kvplan follows
changes, 0.4.0 to 0.5.23, each read from that release's wheel (``pip download sglang==X --no-deps``; the last
patch of each minor was read: 0.4.0.post2, ..., 0.5.23). Paths are under ``python/sglang/srt/`` of the release
the row names. A row is the previous row with what changed (``changes``, and the release's file:line in
``source``); every minor release on PyPI from 0.4.0 to 0.5.23 (``MINORS``) maps to the newest row at or below it.
Patches inside a minor (``.postN``) were not bisected: a rule is dated to the minor whose last patch has it.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.engines.sglang import archs
from kvplan.engines.sglang.row import PrefillGraphs, SglangRelease, SwaPool, Tier
from kvplan.engines.version import Version

# Every SGLang minor release on PyPI from 0.4 on (there is no 0.5.0).
MINORS = (*(f"0.4.{n}" for n in range(11)), *(f"0.5.{n}" for n in range(1, 24)))
# The launch command's entry points by release (``kvplan.engines.sglang.spelling``): ``sglang serve`` from 0.5.5
# (0.5.5 entry_points.txt:2 ``sglang = sglang.cli.main:main``, cli/serve.py:13 ``serve``), taking a positional model
# from 0.5.16 (0.5.16 cli/serve.py:49-53 ``_normalize_positional_model_path``).
SERVE_FROM, SERVE_POSITIONAL_FROM = "0.5.5", "0.5.16"
gib = 1024  # MiB


def _swa(prev: SglangRelease, names: frozenset[str]) -> SwaPool:
    assert prev.swa is not None
    return replace(prev.swa, archs=names)


r040 = SglangRelease(
    key="0.4.0", fraction_rule="tp-table", unknown_gpu_fraction=None,
    tiers=(Tier(below_mib=25_000, chunked=2048, max_bs=(8, 80)), Tier(below_mib=None, chunked=8192, max_bs=(160, 160))),
    unknown_tier=Tier(below_mib=None, chunked=8192, max_bs=(160, 160)), dp_forced=True, heads_by_attention_tp=False,
    dp_reserve="none", spec_methods=(), spec_rule=None, spec_reserve_mib=(0, 0, 0), prefill_graphs=None,
    max_bs_capped=False, pages=False, pp="none", swa=None, v_head_dim_cell=False, mamba="none", vlm_factor=False,
    mm_reserve_mib=0, kv_dtypes=frozenset({"auto", "fp8_e5m2"}), log="none", mla_log=False, no_memory="plain",
    changes="mem_fraction_static by tp only (0.88/0.87/0.85/0.81/0.79 at tp 1/2/4/8/16); #tokens = (free after "
            "weights − free at init × (1 − f)) // cell; the pool holds N + 1 slots; DP attention sets dp = tp",
    source="0.4.0.post2 server_args.py:170-198, :221-227, :330; model_executor/model_runner.py:460-485")
r041 = replace(r040, key="0.4.1", heads_by_attention_tp=True, kv_dtypes=frozenset({"auto", "fp8_e5m2", "fp8_e4m3"}),
               log="sizes", changes="KV heads split over the attention TP size tp // dp; fp8_e4m3 KV; the pool "
               "logs 'KV Cache is allocated. K size, V size'",
               source="0.4.1.post7 model_executor/model_runner.py:532-557, layers/dp_attention.py:12-19, "
                      "server_args.py:358, mem_cache/memory_pool.py:194-196")
r043 = replace(r041, key="0.4.3", spec_methods=("eagle", "mtp"), spec_rule="headroom", log="tokens",
               changes="EAGLE target and draft share N + reqs × (steps × topk + draft tokens) + 100 slots; the "
               "allocation line logs #tokens",
               source="0.4.3.post4 model_executor/model_runner.py:672-692, mem_cache/memory_pool.py:211")
r044 = replace(r043, key="0.4.4", dp_forced=False, pages=True,
               changes="--page-size: N rounded down to the page, the pool holds N + page slots; --dp-size with DP "
               "attention (1 < dp <= tp)",
               source="0.4.4.post4 model_executor/model_runner.py:745-748, mem_cache/memory_pool.py:250-258, "
                      "server_args.py:298-304")
r045 = replace(r044, key="0.4.5", fraction_rule="tp-table-80g", spec_methods=("eagle", "eagle3", "mtp"),
               tiers=(Tier(below_mib=25_000, chunked=2048, max_bs=(8, 80)), Tier(below_mib=None, chunked=8192, max_bs=(0, 0))),
               mla_log=True, changes="G > 80 GiB: f = (G − 13 GiB) / G, unrounded; EAGLE-3; the MLA pool logs its "
               "line", source="0.4.5.post3 server_args.py:224-239, mem_cache/memory_pool.py:452-454")
r046 = replace(r045, key="0.4.6", fraction_rule="tp-pp-table", unknown_gpu_fraction=0.88, pp="per-stage",
               changes="table keyed by tp·pp; G > 80 GiB: 0.88, then above 96 GiB min(f + 48 GiB·(1 − f)/G, "
               "(G − 18 GiB)/G); pipeline parallelism, each stage sizing its own pool",
               source="0.4.6.post5 server_args.py:247-269, model_executor/model_runner.py:785-820")

tiers_047 = (Tier(below_mib=20 * gib, chunked=2048, max_bs=(8, 80), reserve_gib=(2.8, 0.1)),
             Tier(below_mib=35 * gib, chunked=2048, max_bs=(8, 80), reserve_gib=(2.8, 0.1)),
             Tier(below_mib=90 * gib, chunked=8192, max_bs=(0, 0), reserve_gib=(9.5, 0.5)),
             Tier(below_mib=100 * gib, chunked=8192, max_bs=(0, 0), reserve_gib=(12.0, 0.5)),
             Tier(below_mib=160 * gib, chunked=8192, max_bs=(0, 0), reserve_gib=(12.0, 0.5)),
             Tier(below_mib=None, chunked=16384, max_bs=(0, 0), reserve_gib=(32.0, 0.0)))
r047 = replace(r046, key="0.4.7", fraction_rule="tiers", tiers=tiers_047, dp_reserve="flat",
               unknown_tier=Tier(below_mib=None, chunked=4096, max_bs=(0, 0)), spec_reserve_mib=(2048, 2048, 0),
               changes="f = round((G − reserved)/G, 3), reserved (a + b·tp·pp) GiB by GPU tier (H100: 9.5 + "
               "tp·pp/2), +2 GiB with a draft, +4 GiB with DP attention; chunked prefill by tier",
               source="0.4.7.post1 server_args.py:261-324")
r049 = replace(r047, key="0.4.9", vlm_factor=True, swa=SwaPool(archs=archs.SWA_049, split="layer-tokens"),
               changes="hybrid sliding-window pool for models whose class has a window (Gemma-2/3/3n): full = "
               "int(N·L / (r·n_swa + n_full)), swa = int(full·r), no page rounding; the default fraction × the "
               "vision-tower factor", source="0.4.9.post6 model_executor/model_runner.py:1059-1061, "
               "server_args.py:342-343, :1952-1992")
r051 = replace(r049, key="0.5.1", swa=SwaPool(archs=archs.SWA_051, split="layer-tokens"),
               changes="gpt-oss gets the sliding-window pool (its class has a window)",
               source="0.5.1.post3 models/gpt_oss.py (get_attention_sliding_window_size)")
r052 = replace(r051, key="0.5.2", spec_methods=("eagle", "eagle3", "mtp", "draft_model"),
               spec_reserve_mib=(2048, 6144, 0), pp="min", mamba="fixed",
               changes="STANDALONE drafts reserve 6 GiB; N = min over PP stages; Qwen3-Next (hybrid GDN): 512 "
               "state slots taken from the budget first",
               source="0.5.2 server_args.py:485-494, model_executor/model_runner.py:1123-1133, :1297-1310, :308-325")

tiers_053 = (Tier(below_mib=20 * gib, chunked=2048, max_bs=(8, 8)), Tier(below_mib=35 * gib, chunked=2048, max_bs=(16, 80)),
         Tier(below_mib=60 * gib, chunked=4096, max_bs=(32, 160)), Tier(below_mib=90 * gib, chunked=8192, max_bs=(256, 512)),
         Tier(below_mib=160 * gib, chunked=8192, max_bs=(256, 512)), Tier(below_mib=None, chunked=16384, max_bs=(512, 512)))
r053 = replace(r052, key="0.5.3", fraction_rule="reserve", tiers=tiers_053, dp_reserve="per-bs", mamba="ratio",
               unknown_tier=Tier(below_mib=None, chunked=4096, max_bs=(160, 160)),
               spec_methods=("eagle", "eagle3", "mtp", "draft_model", "ngram"),
               changes="reserved MiB = 512 + 1.5·max(chunked, 2048) + 2·decode max_bs + 1024·tp·pp/8 (+ 3·max_bs·dp"
               " with DP attention), at least 10 GiB above 60 GiB, then + the draft's (not NGRAM); Mamba state "
               "takes ratio 0.9/(1 + 0.9) of the budget",
               source="0.5.3.post3 server_args.py:599-765 (reserve :719-751), model_executor/model_runner.py:1375-1422; "
                      "DSA pool (0.5.3 mem_cache/memory_pool.py:1055, :1214-1270): fp8 latent rows of 656 B, "
                      "(N + page + 1) // page pages of index keys; cell and line without them "
                      "(model_executor/model_runner.py:1275-1297, memory_pool.py:1094)")
r054 = replace(r053, key="0.5.4", tiers=(tiers_053[0], replace(tiers_053[1], max_bs=(24, 80)), *tiers_053[2:]),
               kv_dtypes=frozenset({"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "nvfp4"}),
               swa=SwaPool(archs=archs.SWA_054, split="layer-tokens"),
               changes="20-35 GiB GPUs: decode max_bs 24 at tp < 4; bf16 and fp4_e2m1 KV (kvplan's nvfp4: x/2 + "
               "x/16 bytes); OLMo-2 class gets the window pool; the DSA indexer (128 fp8 + 4 B scale per layer) "
               "in the cell and in the pool's line", dsa_indexer_counted=True,
               source="0.5.4.post3 server_args.py:2015 (choices), _handle_gpu_memory_settings; models/olmo2.py; "
                      "model_executor/model_runner.py:1383-1416; mem_cache/memory_pool.py:1457, :1511")
r057 = replace(r054, key="0.5.7", v_head_dim_cell=True, spec_rule="reuse",
               swa=SwaPool(archs=archs.SWA_057, split="layer-tokens-paged"),
               changes="the cell counts head_dim + v_head_dim; the draft reuses N (no headroom); only MiMo-V2-Flash "
               "gets the sliding-window pool (Gemma-2/3, gpt-oss: every layer full), split page-aligned",
               source="0.5.7 model_executor/model_runner_kv_cache_mixin.py:49-111, :201-269; "
                      "configs/model_config.py:1147-1167")
r058 = replace(r057, key="0.5.8", swa=SwaPool(archs=archs.SWA_058, split="layer-tokens-paged"),
               changes="sliding-window pool allowlist: Llama-4, gpt-oss, MiMo-V2-Flash",
               source="0.5.8.post1 configs/model_config.py:1220-1228")
r059 = replace(r058, key="0.5.9", swa=SwaPool(archs=archs.SWA_059, split="memory-weighted"),
               changes="+ Step-3.5; full = int(N·(F·n_full + S·n_swa)/(F·n_full + r·S·n_swa)), swa = int(full·r), "
               "page-aligned", source="0.5.9 configs/model_config.py:1320-1330, "
               "model_executor/model_runner_kv_cache_mixin.py:251-337")

pg = PrefillGraphs(off_when=frozenset({"spec", "dp", "pp", "lora", "multimodal", "offload", "nsa"}),
                   off_archs=archs.PCG_OFF_0510)
r0510 = replace(r059, key="0.5.10", prefill_graphs=pg, spec_reserve_mib=(4096, 6144, 0), no_memory="current-value",
                changes="prefill piecewise CUDA graphs on by default: + 8 MiB per capture size (MLA 1,536 MiB) "
                "before the floor, off with a draft, DP attention, PP, LoRA, a vision tower, CPU offload / HiCache or a "
                "blacklisted architecture; EAGLE reserve 4 GiB; 'Not enough memory' names the fraction",
                source="0.5.10.post1 server_args.py:1078-1139, :1283-1325, :1397-1415; "
                       "model_executor/model_runner_kv_cache_mixin.py:55-59")
pg11 = replace(pg, off_when=pg.off_when - {"spec"})
r0511 = replace(r0510, key="0.5.11", prefill_graphs=pg11, swa=SwaPool(archs=archs.SWA_0511, split="available"),
                changes="a draft no longer turns prefill graphs off; sliding pool: full = page(budget // (F·n_full + "
                "r·S·n_swa)), swa = page(int(full·r)); + Gemma-4",
                source="0.5.11 server_args.py:1194-1261; model_executor/pool_configurator.py:184-284")
r0512 = replace(r0511, key="0.5.12", swa=SwaPool(archs=archs.SWA_0512, split="available"),
                prefill_graphs=replace(pg11, off_archs=archs.PCG_OFF_0512),
                changes="+ DeepSeek-V4 and Laguna in the sliding-window pool; DeepSeek-V4 keeps no prefill graphs",
                source="0.5.12.post1 configs/model_config.py:1558-1566, :1660-1675")
pg13 = PrefillGraphs(off_when=frozenset({"dp", "pp", "lora", "multimodal", "offload"}), off_archs=archs.PCG_OFF_0513,
                     context_cap=True)
r0513 = replace(r0512, key="0.5.13", prefill_graphs=pg13,
                swa=SwaPool(archs=archs.SWA_0513, split="available", opt_in=True),
                log="dtype", changes="prefill graphs capped at an explicit --context-length, back on for DeepSeek-"
                "V3.2/GLM-5; the allocation line names the dtype", source="0.5.13.post1 server_args.py:1342-1411, "
                ":1579-1584; configs/model_config.py:1579-1585, :1679-1705; mem_cache/memory_pool.py:819")
pg14 = replace(pg13, off_when=pg13.off_when | {"eager"}, multimodal_archs=archs.MM_TC_0514)
r0514 = replace(r0513, key="0.5.14", prefill_graphs=pg14, spec_rule="cell", spec_reserve_mib=(0, 0, 0),
                no_memory="weights",
                changes="no draft reserve: the cell grows by the draft's layers (draft weights counted before the "
                "pool); tc_piecewise prefill graphs, off with --disable-cuda-graph",
                source="0.5.14 server_args.py:2942-2944, :2997-3057, :3122-3329; model_executor/pool_configurator.py"
                       ":108-233; model_executor/model_runner_kv_cache_mixin.py:102-117")

pg15 = PrefillGraphs(off_when=frozenset({"mla", "dp", "lora", "multimodal", "eager"}), off_archs=archs.DEEPSEEK_V4,
                     context_cap=True, eager_drops_decode=True)
r0515 = replace(r0514, key="0.5.15", prefill_graphs=pg15, swa=_swa(r0514, archs.SWA_0515),
                changes="breakable prefill graphs (CUDA): off for MLA, DP attention, LoRA, a vision tower, "
                "DeepSeek-V4 (PP keeps them); --disable-cuda-graph also drops the decode-graph reserve",
                source="0.5.15.post1 server_args.py:3341-3384, :3623-3687; model_executor/cuda_graph_config.py:95-113")
pg16 = replace(pg15, off_when=pg15.off_when | {"dcp"}, multimodal_archs=archs.MM_BCG_0516)
r0516 = replace(r0515, key="0.5.16", prefill_graphs=pg16, swa=_swa(r0515, archs.SWA_0516),
                changes="decode context parallelism turns prefill graphs off; Qwen3.5 vision models keep them",
                source="0.5.16 server_args.py:3763-3815, :4164-4196; configs/model_config.py:1785")
pg17 = replace(pg16, off_when=frozenset({"mla-non-dsa", "multimodal", "eager", "dcp"}),
               off_archs=archs.DEEPSEEK_V4 | archs.NEMOTRON_H, context_cap=False)
r0517 = replace(r0516, key="0.5.17", prefill_graphs=pg17,
                changes="prefill graphs kept with DP attention, LoRA and DeepSeek-V3.2 (DSA); off for NemotronH; no "
                "--context-length cap; the cell counts a DSA latent as stored (fp8: 656 B; kvplan assumes a scaled "
                "layout backend: trtllm and HIP tilelang/aiter keep the raw 576 B, not modelled)",
                dsa_cell_stored=True, source="0.5.17 server_args.py:4452-4522, :4724-4751, :4882-4922; "
                "model_executor/pool_configurator.py:201-235; mem_cache/kv_cache_configurator.py:1985")
pg18 = replace(pg17, off_when=frozenset({"multimodal", "eager", "dcp"}), off_archs=archs.DEEPSEEK_V4,
               multimodal_archs=archs.MM_BCG_0518)
r0518 = replace(r0517, key="0.5.18", prefill_graphs=pg18, mm_reserve_mib=100, swa=_swa(r0517, archs.SWA_0518),
                changes="MLA models keep prefill graphs (1,536 MiB reserve again); multimodal models give 100 MiB "
                "of the pool's budget to the embedding cache",
                source="0.5.18 server_args.py:4666-4717, :5078-5118; mem_cache/kv_cache_configurator.py:130-145")
pg19 = replace(pg18, off_when=pg18.off_when | {"pp"}, multimodal_archs=archs.MM_BCG_0519)
r0519 = replace(r0518, key="0.5.19", prefill_graphs=pg19, swa=_swa(r0518, archs.SWA_0519),
                changes="PP turns prefill graphs off; + Granite-SWA in the sliding-window pool", source="0.5.19 arg_groups/cuda_graph_hook.py:122, :262-323; "
                "arg_groups/memory_hook.py:292-334; configs/model_config.py (is_hybrid_swa_model)")

tiers_0520 = (r0519.tiers[0], replace(r0519.tiers[1], chunked=4096, max_bs=(48, 160)), *r0519.tiers[2:])
pg20 = replace(r0519.prefill_graphs or PrefillGraphs(off_when=frozenset()),
               off_when=frozenset({"multimodal", "eager", "dcp", "pp", "kda"}), multimodal_archs=archs.MM_BCG_0520)
r0520 = replace(r0519, key="0.5.20", tiers=tiers_0520, unknown_gpu_fraction=0.95, prefill_graphs=pg20,
                changes="20-35 GiB GPUs: chunked prefill 4,096, decode max_bs 48 / 160; G unknown: 0.95; KDA "
                "(Kimi-Linear) models keep no prefill graphs",
                source="0.5.20 arg_groups/memory_hook.py:47-347, arg_groups/cuda_graph_hook.py (breakable rules); "
                       "configs/model_config.py:183-205")
r0521 = replace(r0520, key="0.5.21", swa=_swa(r0520, archs.SWA_0521),
                changes="+ IQuest-Q1 and DiffusionGemma in the sliding-window pool (the fp4_e2m1 KV name is gone; "
                "nvfp4 stays)", source="0.5.21 configs/model_config.py (is_hybrid_swa_model, SWA_SINK_ARCHS :86-94), "
                "arg_groups/fields/model.py:189")
r0522 = replace(r0521, key="0.5.22", max_bs_capped=True, swa=_swa(r0521, archs.SWA_0522),
                prefill_graphs=replace(pg20, multimodal_archs=archs.MM_BCG_0522),
                changes="a default decode max_bs is capped at --max-running-requests before the reserve; the DP "
                "term uses attn_dp_size", source="0.5.22 arg_groups/memory_hook.py:47-356, :359-401")
r0523 = replace(r0522, key="0.5.23", swa=_swa(r0522, archs.SWA_0523),
                prefill_graphs=replace(pg20, multimodal_archs=archs.MM_BCG_0523),
                changes="+ Beam in the sliding-window pool; MLA prefill "
                "graphs up to 8,192 tokens (the flat MLA reserve is unchanged)",
                source="0.5.23 arg_groups/memory_hook.py:47-354 (fraction :281-331, reserve_for_graph_mb :357-399), "
                       "configs/model_config.py:2651-2697, arg_groups/cuda_graph_hook.py:136-256")

ROWS = (r040, r041, r043, r044, r045, r046, r047, r049, r051, r052, r053, r054, r057, r058, r059, r0510, r0511, r0512, r0513, r0514, r0515, r0516, r0517, r0518, r0519, r0520, r0521, r0522, r0523)
RELEASES = {r.key: r for r in ROWS}
NEWEST = ROWS[-1].key


def release_for(version: str) -> SglangRelease | None:
    """The row a minor release follows (the newest step at or below it); None: not a minor kvplan knows."""
    if version not in MINORS:
        return None
    at = Version.parse(version)
    return max((r for r in ROWS if Version.parse(r.key) <= at), key=lambda r: Version.parse(r.key))
