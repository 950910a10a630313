"""aka_runners: where attempts execute (local, Docker, Slurm), claiming work from the ledger."""
