"""The compatibility matrix command, its site file and the generation of its data."""
