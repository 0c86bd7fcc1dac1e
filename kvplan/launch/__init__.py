"""Launch commands in and out: a `vllm serve` / `python -m sglang.launch_server` / `trtllm-serve` line read into a
capacity question (``kvplan.launch.read``), and the command a plan should be launched with (``kvplan.launch.write``),
each checked against that engine release's own flags (``kvplan.launch.tables``). Loaded only where a command is
read or written: ``kvplan size`` never imports it.
"""
