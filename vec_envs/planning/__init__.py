"""Env states for planning: snapshots of any env, ALE's own snapshots, and the checks and packing
behind the batch planning calls (get_states, set_states, sync_states, step_batch)."""
