"""Stepping envs in one process: the one loop every backend uses, and the old-gym adapter."""
