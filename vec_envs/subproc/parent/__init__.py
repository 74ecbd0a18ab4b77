"""The subprocess transport's parent side: what the VecEnv's process runs."""
