"""The subprocess transport: SubprocVecEnv and its worker processes.

One file per protocol, both ends in it: ``lanes.py`` (the requests and answers in
shared memory), ``doorbell.py`` (the wake-up, both ways), ``child.py`` (the worker's
loop and its serving), ``process.py`` (the parent's handle on a worker process),
``lane_scheduler.py`` (the parent's one path over the lanes). The words are in the
glossary of the docs (``docs/glossary.md``).
"""
