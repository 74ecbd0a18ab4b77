"""`python scripts/convert_vecnormalize.py`: the `vec-envs-convert-vecnormalize` command."""
from vec_envs_commands import convert_vecnormalize as main

if __name__ == "__main__":
    raise SystemExit(main())
