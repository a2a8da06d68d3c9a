"""Everything that touches pyinfra beyond its public API, behind one door: planning (the
speedups, planning hosts and reading their plan), the fact cache and the survey that fills
it, refusing a host, connections and SSH, inventories and the one fleet model of each, and
pyinfra's context for rocm-fleet's own commands."""
