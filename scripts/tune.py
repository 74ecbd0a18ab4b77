"""`python scripts/tune.py`: the `vec-envs-tune` command (vec_envs/cli/tune.py)."""
from vec_envs.cli.tune import main

if __name__ == "__main__":
    raise SystemExit(main())
