"""What every worker backend shares: the VecEnv over workers, the scheduler interface,
the messages and the env slice each worker steps."""
