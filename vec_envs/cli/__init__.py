"""The console commands (``vec-envs-run-atari``, ``vec-envs-train-ppo``,
``vec-envs-convert-vecnormalize``, ``vec-envs-train-multiagent``, ``vec-envs-check``,
``vec-envs-tune``) and the one argument helper they share, ``args.parse_args``."""
