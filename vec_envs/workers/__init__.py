"""The worker layer every worker backend shares: the Worker interface, the command protocol,
the parent side (WorkerVecEnv) and the parent's own slice (LocalWorker)."""
