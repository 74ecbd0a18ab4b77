"""The subprocess transport: SubprocVecEnv, its worker process and slice server (shared
memory, doorbells) and spin-waiting."""
