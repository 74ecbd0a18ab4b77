"""`python scripts/train_ppo.py`: the `vec-envs-train-ppo` command (vec_envs/cli/train_ppo.py)."""
from vec_envs_commands import train_ppo as main

if __name__ == "__main__":
    raise SystemExit(main())
