"""Planning on real hardware: the GPU catalog, model weights, the KV budget, engine capacity, fit.

``capacity`` and ``fit`` answer "how many tokens / requests on this GPU"; ``budget`` turns GPU
memory into KV memory the engine's way; ``weights`` and ``gpus`` are the data it needs.
"""
