"""The subprocess transport: SubprocVecEnv and its worker processes.

Rooms, by who runs them:

- ``subproc_vec_env.py``: ``SubprocVecEnv``, the user's object;
- ``parent/``: what the VecEnv's process runs: its handle on each worker process
  (``worker_process.py``), its requests through the lanes (``lane_requests.py``, over
  ``lanes.py``) and its one wait for answers (``waiting.py``);
- ``worker/``: what a worker process runs: its loop (``main.py``), its serving of the
  pipe and the lanes (``serving.py``, over ``lanes.py``), its watch on the parent;
- ``shared/``: what both read and write: the control block's layout
  (``control_block.py``), the wire messages (``messages.py``), the wake-up fds
  (``wake.py``), the fence, the spin, and their C kernel.

Glossary (the words this package uses; the rest of vec_envs uses them the same way):

- **request**: the parent asks an env to reset or step. Lock-step requests every env at
  once; ``send`` requests some.
- **answer**: a worker says an env's request is done: its rows are in the batch buffers.
- **batch**: the rows one call returns: every env's (``step``, ``reset``) or
  ``batch_size`` envs' (``recv``).
- **lane**: an env's two words in the control block: the number of its last request
  (``requested``), and the number of its last answer, with a bit saying whether a
  message went with it (``answered``).
- **control block**: the lanes of every env, then a row per worker and one for the
  parent, in shared memory after the batch buffers and the actions.
- **message**: what an env has to say beyond its rows (an info, a reset info, an error),
  sent through the worker's pipe; the envs of one serving share one ``EnvMessages``.
- **serving**: one pass of a worker over the requests it found (runs of consecutive
  envs, each stepped in one loop).
- **ready**: an env whose answer the parent has seen and that ``recv`` has not returned
  yet (``AsyncEnvs``).
- **owed**: an env that waited for its ``send`` while its worker was replaced: its next
  row says so (``env_restarted``).
- **wake fd / bell**: the file descriptors that wake a sleeping parent (answers) and
  sleeping workers (requests); a **ring** is one write to the bell.
- **spin**: polling for a while before sleeping, for as long as waits usually take.
- **fence**: the barrier between a store and a load to shared memory that keeps two
  processes from both missing the other's store.
- **parent's own slice**: with ``step_in_parent``, the last slice of envs, stepped by the
  parent itself while the workers step theirs.
"""
