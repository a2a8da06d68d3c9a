"""Source of the torch/torchvision/torchaudio doubles shipped in the lab's wheels.

Kept as plain text templates (not imported by the lab) because the code runs inside the
lab hosts' venvs.  The torch double reads the host's hardware profile, so a deploy's
"does torch see the GPU" check behaves as on real hardware, including no GPU and a user
who is not in the render group.
"""

TORCH_INIT = '''\
"""torch double built by the rocm-fleet test lab (pure python, not PyTorch)."""

import os as _os

from . import cuda, version
from ._tensor import Tensor, float32, float16, matmul, ones, zeros, full, tensor

__version__ = "@VERSION@"
__all__ = ["Tensor", "cuda", "version", "matmul", "ones", "zeros", "full", "tensor",
           "float32", "float16", "device"]


class device:
    def __init__(self, spec, index=None):
        if isinstance(spec, device):
            spec, index = spec.type, spec.index
        spec = str(spec)
        if ":" in spec:
            spec, idx = spec.split(":", 1)
            index = int(idx)
        if spec not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type: {spec}")
        self.type = spec
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    __repr__ = lambda self: f"device(type={self.type!r}" + (
        "" if self.index is None else f", index={self.index}") + ")"
'''

TORCH_VERSION = '''\
"""torch.version double."""

__version__ = "@VERSION@"
hip = @HIP@
cuda = @CUDA@
git_version = "0000000000000000000000000000000000000000"
debug = False
'''

TORCH_CUDA = '''\
"""torch.cuda double: devices come from /etc/rocm-fleet-lab/gpus (ROCm builds only)."""

import os as _os

from . import version as _version

_PROFILE = "/@PROFILE_PATH@"


class _DeviceProperties:
    def __init__(self, name, arch, uuid):
        self.name = name
        self.gcnArchName = arch
        self.uuid = uuid
        self.major, self.minor = _cc(arch)
        self.total_memory = 192 * 1024**3 if arch.startswith("gfx94") else 24 * 1024**3
        self.multi_processor_count = 96
        self.is_integrated = name == "AMD Radeon Graphics"

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, gcnArchName='{self.gcnArchName}', "
                f"total_memory={self.total_memory // 1024**2}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid})")


def _cc(arch):
    digits = arch.split(":")[0][3:]
    return (int(digits[:-2] or 0), int(digits[-2:-1] or 0, 16)) if digits else (0, 0)


def _in_render_group():
    if _os.getuid() == 0:
        return True
    try:
        import grp
        gid = grp.getgrnam("render").gr_gid
    except KeyError:
        return False
    return gid in _os.getgroups() or gid == _os.getgid()


def _visible(gpus):
    for var in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        spec = _os.environ.get(var)
        if spec is None:
            continue
        picked = []
        for item in filter(None, (s.strip() for s in spec.split(","))):
            if item.isdigit() and int(item) < len(gpus):
                picked.append(gpus[int(item)])
            else:
                picked += [g for g in gpus if g[2] == item]
        gpus = picked
    return gpus


def _devices():
    if _version.hip is None:
        return []  # a CUDA build on an AMD host sees no device
    try:
        with open(_PROFILE) as fh:
            lines = [line.rstrip("\\n") for line in fh if line.strip()]
    except OSError:
        return []
    if not _in_render_group():
        return []
    return _visible([tuple(line.split("|")) for line in lines])


def is_available():
    return bool(_devices())


def device_count():
    return len(_devices())


def _check(i):
    devs = _devices()
    if not devs:
        raise RuntimeError("No HIP GPUs are available" if _version.hip else
                           "Found no NVIDIA driver on your system.")
    if isinstance(i, str):
        i = int(i.split(":")[1]) if ":" in i else 0
    i = 0 if i is None else getattr(i, "index", i) or 0
    if not 0 <= i < len(devs):
        raise AssertionError("Invalid device id")
    return devs[i]


def get_device_name(device=None):
    return _check(device)[1]


def get_device_properties(device=None):
    gfx, name, uuid, arch = _check(device)
    return _DeviceProperties(name, arch, uuid)


def current_device():
    _check(0)
    return 0


def synchronize(device=None):
    _check(device)


def is_initialized():
    return is_available()
'''

TORCH_TENSOR = '''\
"""A tiny tensor: 2-D, constant-filled or explicit, enough for a smoke matmul."""

float32 = "float32"
float16 = "float16"


def _device_of(device):
    from . import cuda, device as _dev
    dev = _dev(device if device is not None else "cpu")
    if dev.type == "cuda":
        cuda._check(dev.index or 0)
    return str(dev)


class Tensor:
    def __init__(self, shape, fill=None, data=None, device="cpu", dtype=float32):
        self.shape = tuple(shape)
        self._fill = fill
        self._data = data
        self.device = device
        self.dtype = dtype

    def _rows(self):
        if self._data is not None:
            return self._data
        rows, cols = (self.shape + (1,))[:2] if len(self.shape) == 1 else self.shape
        return [[self._fill] * cols for _ in range(rows)]

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def to(self, device=None, dtype=None, **_kw):
        dev = _device_of(device) if device is not None else self.device
        return Tensor(self.shape, self._fill, self._data, dev, dtype or self.dtype)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    @property
    def is_cuda(self):
        return self.device.startswith("cuda")

    def __matmul__(self, other):
        return matmul(self, other)

    def sum(self):
        if self._data is None:
            return Tensor((), self._fill * self.numel(), None, self.device, self.dtype)
        return Tensor((), sum(sum(r) for r in self._data), None, self.device, self.dtype)

    def item(self):
        if self.numel() != 1:
            raise RuntimeError("a Tensor with more than one element cannot be converted")
        return self._fill if self._data is None else self._data[0][0]

    def __repr__(self):
        dev = "" if self.device == "cpu" else f", device='{self.device}'"
        return f"tensor(shape={list(self.shape)}{dev})"


def matmul(a, b):
    if a.device != b.device:
        raise RuntimeError("Expected all tensors to be on the same device, but found at "
                           f"least two devices, {a.device} and {b.device}!")
    (n, k), (k2, m) = a.shape, b.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if a._data is None and b._data is None:
        return Tensor((n, m), a._fill * b._fill * k, None, a.device, a.dtype)
    ra, rb = a._rows(), b._rows()
    data = [[sum(ra[i][x] * rb[x][j] for x in range(k)) for j in range(m)] for i in range(n)]
    return Tensor((n, m), None, data, a.device, a.dtype)


def full(size, fill_value, *more, device=None, dtype=float32, **_kw):
    shape = tuple(size) if isinstance(size, (tuple, list)) else (size, *more)
    return Tensor(shape, fill_value, None, _device_of(device), dtype)


def ones(*size, device=None, dtype=float32, **kw):
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    return full(shape, 1.0, device=device, dtype=dtype, **kw)


def zeros(*size, device=None, dtype=float32, **kw):
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    return full(shape, 0.0, device=device, dtype=dtype, **kw)


def tensor(data, device=None, dtype=float32, **_kw):
    rows = [list(map(float, r)) for r in data] if data and isinstance(data[0], (list, tuple)) \\
        else [[float(x) for x in data]]
    return Tensor((len(rows), len(rows[0])), None, rows, _device_of(device), dtype)
'''

COMPANION_INIT = '''\
"""@NAME@ double built by the rocm-fleet test lab."""

import torch as _torch

__version__ = "@VERSION@"
_REQUIRED_TORCH = "@TORCH@"
if _torch.__version__ != _REQUIRED_TORCH:
    raise RuntimeError(f"@NAME@ @VERSION@ needs torch {_REQUIRED_TORCH}, "
                       f"found {_torch.__version__}")
'''
