"""Radeon workstations: one RX 7900 XTX (or Radeon PRO W7900) each, gfx1100, for the
people named per host in the inventory (rocm_users: added to video and render)."""

rocm_version = "6.4.3"
expected_gfx = "gfx1100"
expected_gpu_count = 1
