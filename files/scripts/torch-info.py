"""What PyTorch sees on a node (``facts.python.TorchInfo``): one ``__torch_json=`` line."""

import json

r = dict(
    torch=None,
    hip=None,
    cuda=None,
    available=None,
    device_count=None,
    devices=None,
    matmul=None,
    error=None,
    device_error=None,
)


def err(e):
    return f"{type(e).__name__}: {e}".strip()


try:
    import torch
except BaseException as e:
    r["error"] = err(e)
else:
    r["torch"] = str(torch.__version__)
    r["hip"] = getattr(torch.version, "hip", None)
    r["cuda"] = getattr(torch.version, "cuda", None)
    try:
        r["available"] = bool(torch.cuda.is_available())
        n = r["device_count"] = int(torch.cuda.device_count())
        r["devices"] = []
        for i in range(n):
            full = getattr(torch.cuda.get_device_properties(i), "gcnArchName", None) or None
            r["devices"].append(
                dict(
                    index=i,
                    name=torch.cuda.get_device_name(i),
                    arch=full.split(":")[0] if full else None,
                    arch_full=full,
                )
            )
    except Exception as e:
        r["device_error"] = err(e)
    if r["available"] and r["device_count"]:
        try:
            a = torch.ones(64, 64, device="cuda:0")
            s = (a @ a).sum().item()
            r["matmul"] = "ok" if s == 64**3 else f"wrong result: {s!r}"
        except Exception as e:
            r["matmul"] = err(e)
print("__torch_json=" + json.dumps(r))
