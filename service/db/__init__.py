"""The store: engine and migrations, jobs, runs, findings, sweeps and run artifacts."""
