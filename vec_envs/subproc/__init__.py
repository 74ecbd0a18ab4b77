"""The subprocess transport: SubprocVecEnv, its worker processes, the env lanes in shared
memory that carry every step (``control.py``), and spin-waiting."""
