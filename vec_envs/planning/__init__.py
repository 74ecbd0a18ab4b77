"""Env states for planning: snapshots of any env (an ALE emulator's come from
``vec_envs.ale.ale_snapshot``), and the checks and packing behind the batch planning calls
(get_states, set_states, sync_states, step_batch)."""
