"""``rocm-fleet matrix update``'s reading of AMD's stable wheel index (matrix.site_update):
a release's torch builds, torchvision paired by its minor, torchaudio only where one is
listed, the device targets and the targets offered fewer builds, from the pages as the index
serves them; nothing for a release it lists no torch for."""

from __future__ import annotations

from rocm_fleet.matrix.command import amd_wheels
from rocm_fleet.model import torch_builds
from rocm_fleet.upstream.client import Response

INDEX = torch_builds.AMD_STABLE_WHEEL_INDEX


class Pages:
    """An UpstreamClient serving PEP 503 project pages of AMD's index (project -> file names)."""

    def __init__(self, projects: dict[str, list[str]]):
        self.projects = projects

    def get(self, url: str) -> Response:
        project = url.removeprefix(INDEX).strip("/")
        files = self.projects.get(project)
        if files is None:
            return Response(url, 404, b"")
        links = "".join(f'<a href="/whl/{name}#sha256={"0" * 64}">{name}</a>\n' for name in files)
        return Response(url, 200, f"<html><body>{links}</body></html>".encode())


def wheel(project: str, version: str) -> str:
    return f"{project.replace('-', '_')}-{version}-cp312-cp312-manylinux_2_28_x86_64.whl"


def test_builds_pairs_and_targets_come_from_the_index():
    label = "+rocm10.9.0"
    pages = Pages({
        "torch": [wheel("torch", f"2.14.0{label}"), wheel("torch", f"2.15.0{label}"),
                  wheel("torch", "2.13.0+rocm10.1.0")],  # another release's: not this one's
        "torchvision": [wheel("torchvision", f"0.29.0a0{label}"),
                        wheel("torchvision", f"0.30.0{label}")],
        "torchaudio": [wheel("torchaudio", f"2.11.0.3{label}"),
                       wheel("torchaudio", f"2.11.0.4{label}")],
        "amd-torch-device-gfx942": [wheel("amd-torch-device-gfx942", f"2.14.0{label}"),
                                    wheel("amd-torch-device-gfx942", f"2.15.0{label}")],
        "amd-torch-device-gfx1150": [wheel("amd-torch-device-gfx1150", f"2.14.0{label}")],
    })  # fmt: skip
    found = amd_wheels(pages, "10.9.0")
    assert found.url == INDEX and found.label == "rocm10.9.0"
    # two torchaudio rebuilds for the release: which goes with which the index doesn't say
    assert found.builds == (
        torch_builds.TorchBuild("2.14.0", "0.29.0a0", None),
        torch_builds.TorchBuild("2.15.0", "0.30.0", None),
    )
    assert found.targets == ("gfx942", "gfx1150")
    assert found.target_builds == (("gfx1150", ("2.14.0",)),)
    assert found.runtime == "rocm[libraries]==10.9.0"


def test_a_release_the_index_lists_no_torch_for_has_none():
    pages = Pages({"torch": [wheel("torch", "2.13.0+rocm10.1.0")]})
    assert amd_wheels(pages, "10.9.0") is None
