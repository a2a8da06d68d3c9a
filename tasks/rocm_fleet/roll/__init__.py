"""The roll: the deploy in waves, each node drained in Slurm, checked and resumed."""
