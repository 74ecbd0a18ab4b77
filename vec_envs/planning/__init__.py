"""Env states for planning: snapshots of any env, ALE's own snapshots."""
