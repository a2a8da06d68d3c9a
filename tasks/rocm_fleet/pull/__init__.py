"""Pull mode: the signed settings published for nodes, and a node's verified fetch."""
