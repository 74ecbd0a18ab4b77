"""`python scripts/check_env.py`: the `vec-envs-check` command (vec_envs/cli/check_env.py)."""
from vec_envs.cli.check_env import main

if __name__ == "__main__":
    raise SystemExit(main())
