# Installed by rocm-fleet: put ROCm's tools (rocminfo, amd-smi, hipcc) on login shells' PATH.
case ":$PATH:" in
    *:/opt/rocm/bin:*) ;;
    *) PATH="$PATH:/opt/rocm/bin" ;;
esac
export PATH
