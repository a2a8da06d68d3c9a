"""The site's GPU nodes: one RX 7900 XTX each (gfx1100)."""

expected_gfx = "gfx1100"
expected_gpu_count = 1
rocm_users = ["researcher"]
