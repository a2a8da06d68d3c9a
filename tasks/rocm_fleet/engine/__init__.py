"""Everything that touches pyinfra beyond its public API, behind one door."""
