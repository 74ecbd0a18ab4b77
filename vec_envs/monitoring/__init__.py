"""Episode statistics: the single-env EpisodeMonitor and the monitor.csv file it and VecMonitor write."""
