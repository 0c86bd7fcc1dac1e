"""Request lines of a serving engine, the bulk of a server's log around its start-up (issue 33's big logs).

Written in the shapes the engines log requests in: vLLM's "Received request" (``vllm/entrypoints/logger.py``) and
uvicorn's access line, vLLM's periodic stats line (``vllm/v1/metrics/loggers.py``), SGLang's prefill batch line
(``sglang/srt/managers/scheduler.py``). No collected start-up log holds these lines.
"""

from __future__ import annotations


def noise(megabytes: float) -> str:
    lines = []
    for i in range(2000):
        lines += [f"INFO 08-07 12:{i % 60:02d}:01 [logger.py:43] Received request cmpl-{i:032x}-0: prompt: 'Tell me "
                  f"about {i}.', params: SamplingParams(n=1, temperature=0.7, max_tokens=256), lora_request: None.",
                  f'INFO:     10.0.0.{i % 250}:{40000 + i} - "POST /v1/completions HTTP/1.1" 200 OK',
                  f"[2025-08-07 12:{i % 60:02d}:01 TP0] Prefill batch. #new-seq: 1, #new-token: 57, #cached-token: 0, "
                  "token usage: 0.01, #running-req: 3, #queue-req: 0"]
        if i % 20 == 0:
            lines.append(f"INFO 08-07 12:{i % 60:02d}:01 [loggers.py:123] Engine 000: Avg prompt throughput: 1234.5 "
                         "tokens/s, Running: 12 reqs, GPU KV cache usage: 3.4%, Prefix cache hit rate: 12.5%")
    block = "\n".join(lines) + "\n"
    return block * max(1, int(megabytes * 1e6 / len(block)))
