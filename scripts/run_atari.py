"""`python scripts/run_atari.py`: the `vec-envs-run-atari` command (vec_envs/cli/run_atari.py)."""
from vec_envs.cli.run_atari import main

if __name__ == "__main__":
    raise SystemExit(main())
