"""rocm-fleet acceptance: a torch smoke on every GPU. Each GPU multiplies two fp32 matrices and
the result is compared with the CPU's; then every GPU joins one all-reduce (RCCL through
torch.distributed's "nccl" backend) and checks the sum. Prints one JSON line:
{"gpus": N, "max_error": E, "allreduce_ok": true|false, "error": "..."}.
"""

import json
import os
import sys
import tempfile


def allreduce(rank, world, store, results):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world)
    value = torch.full((1024,), float(rank + 1), device=f"cuda:{rank}")
    dist.all_reduce(value)
    torch.cuda.synchronize(rank)
    results[rank] = bool(torch.all(value == world * (world + 1) / 2).item())
    dist.destroy_process_group()


def main():
    out = {"gpus": 0, "max_error": 0.0, "allreduce_ok": False}
    try:
        import torch
        import torch.multiprocessing as mp

        gpus = torch.cuda.device_count()
        out["gpus"] = gpus
        torch.manual_seed(0)
        a, b = torch.randn(256, 256), torch.randn(256, 256)
        want = a @ b
        for gpu in range(gpus):
            got = (a.to(f"cuda:{gpu}") @ b.to(f"cuda:{gpu}")).cpu()
            error = float(((got - want).abs().max() / want.abs().max()).item())
            out["max_error"] = max(out["max_error"], error)
        if gpus:  # one GPU too: its process group is the same code path
            with tempfile.TemporaryDirectory() as scratch:
                results = mp.Manager().dict()
                store = os.path.join(scratch, "store")
                mp.spawn(allreduce, args=(gpus, store, results), nprocs=gpus)
                out["allreduce_ok"] = all(results.get(r, False) for r in range(gpus))
    except Exception as exc:  # reported, never raised: the line is the result
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
