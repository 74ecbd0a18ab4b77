"""Timing a batch of envs, written once for ``vec_envs.tune`` and the benchmark
(``scripts/benchmark.py``): the timing loops, the steppers every batch API is driven
through, one cell measured in a fresh process while its parent counts the CPU and memory
of its whole process tree, envs of known cost, and the tables and machine line a report
prints with its figures.

- ``loops``: ``run_for`` (throughput), ``time_calls`` (latency), ``time_block``, ``presample``.
- ``steppers``: ``Stepper`` and the ones of vec_envs and gymnasium; ``EnvCounts``.
- ``process_tree``: CPU and memory of a process tree (psutil, the ``bench`` extra).
- ``cells``: ``CellSpec``, ``run_cell`` (the parent) and ``measure`` (the cell).
- ``synthetic``: envs that cost nothing, compute 0.2-2 ms or wait 0-2 ms per step.
- ``tables``, ``machine``: Markdown tables, and the machine's line.

What one env's step costs, and the layout of workers it calls for, is ``vec_envs.worker_plan``.
"""
