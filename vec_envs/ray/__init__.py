"""The Ray transport: RayVecEnv and its actor worker."""
