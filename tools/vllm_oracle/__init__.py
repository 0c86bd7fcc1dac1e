"""vllm_oracle: vLLM 0.33.0's own KV cache planning, run on CPU as on an H100.

See README.md. Import `vllm_oracle.fakes` and call `install()` before any
other vLLM import; `python -m vllm_oracle` does that for you.
"""
