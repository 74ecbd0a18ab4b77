"""`python scripts/convert_vecnormalize.py`: the `vec-envs-convert-vecnormalize` command."""
from vec_envs.cli.convert_vecnormalize import main

if __name__ == "__main__":
    raise SystemExit(main())
