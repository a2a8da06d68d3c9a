"""Instinct servers: eight MI300X each (gfx942), the full ROCm meta package for the
training jobs' service account, and a reboot when the deploy needs one (the scheduler
drains them first; a workstation's user is asked instead)."""

rocm_version = "7.2.1"
rocm_packages = ["rocm"]
expected_gfx = "gfx942"
expected_gpu_count = 8
rocm_users = ["svc-train"]
rocm_reboot = "allow"
