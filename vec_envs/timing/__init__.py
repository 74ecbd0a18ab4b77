"""Timing a batch of envs, written once for ``vec_envs.tune`` and the benchmark
(``scripts/benchmark.py``): the timing loops, the steppers every batch API is driven
through, one cell measured in a fresh process while its parent counts the CPU and memory
of its whole process tree, and the cost of one env's step.

- ``loops``: ``run_for`` (throughput), ``time_calls`` (latency), ``time_block``, ``presample``.
- ``steppers``: ``Stepper`` and ours: ``RawStepper``, ``VecEnvStepper``, ``RecvSendStepper``.
- ``process_tree``: CPU and memory of a process tree (psutil, the ``bench`` extra).
- ``cells``: ``CellSpec``, ``run_cell`` (the parent) and ``measure`` (the cell).
- ``step_cost``: wall and CPU seconds of one env's step, and the layout of workers they call for.
"""
