"""The benchmark behind ``scripts/benchmark.py``, over the timing harness of ``vec_envs.timing``:
``envs`` (the envs and workloads), ``contenders`` (every contender and how it is built, the
machine ceiling), ``suite`` (the workloads command and its presets), ``report`` and ``plot``
(its tables and PNGs), ``overhead`` (where a batch's CPU goes), ``micro`` (the other commands).

``python scripts/benchmark.py`` puts ``scripts/`` first on ``sys.path``: this package imports as ``bench``.
"""
