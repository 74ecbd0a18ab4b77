"""The subprocess transport: SubprocVecEnv, its worker process, doorbells and spin-waiting."""
