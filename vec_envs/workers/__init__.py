"""The worker layer every worker backend shares: the Worker interface, the command protocol,
the parent side (WorkerVecEnv, with its Messenger and RestartPolicy) and the parent's own
slice (LocalWorker)."""
