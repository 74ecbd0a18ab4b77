"""`python scripts/run_atari.py`: the `vec-envs-run-atari` command (vec_envs/cli/run_atari.py)."""
from vec_envs_commands import run_atari as main

if __name__ == "__main__":
    raise SystemExit(main())
