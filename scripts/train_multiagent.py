"""`python scripts/train_multiagent.py`: the `vec-envs-train-multiagent` command (vec_envs/cli/train_multiagent.py)."""
from vec_envs_commands import train_multiagent as main

if __name__ == "__main__":
    raise SystemExit(main())
