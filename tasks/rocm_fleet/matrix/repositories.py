"""repositories.json: AMD's apt repositories, streams, publications and per-GPU packages, from
the records of repo.radeon.com, repo.amd.com and the keys."""

from pathlib import Path

from rocm_fleet.matrix.inputs import MatrixDataError, read_toml


def repository_tables(records: Path) -> dict[str, list[dict]]:
    """repositories.json's sections (AMD's apt repositories, streams, publications and per-GPU
    packages) from the records of repo.radeon.com, repo.amd.com and the keys."""
    radeon = read_toml(records / "repo.radeon.com.toml")
    amd = read_toml(records / "repo.amd.com.toml")
    keys = read_toml(records / "keys.toml")

    def base(template: str, placeholder: str) -> str:
        head, found, _ = template.partition(placeholder)
        if not found:
            raise MatrixDataError(f"repository URL {template!r} has no {placeholder}")
        return head.rstrip("/")

    def x_repo_id(entry: dict) -> str | None:
        fields = dict(
            f.strip().split(": ", 1) for f in entry.get("deb822", "").split(" / ") if ": " in f
        )
        return fields.get("X-Repo-Id")

    classic = radeon["repository"]
    multi, stable = amd["repository"]["multi-arch"], amd["repository"]["stable"]
    repositories = [
        {"name": "repo.radeon.com", "base_url": base(classic["rocm_url"], "{folder}"),
         "key_url": keys["radeon"]["url"], "deb822": False, "x_repo_id": None,
         "from": "repo.radeon.com.toml [repository]; keys.toml [radeon]",
         "source": f"{classic['source']} Key: {keys['radeon']['url_source']}"},
        {"name": "repo.amd.com", "base_url": base(multi["url"], "{directory}"),
         "key_url": multi["key"], "deb822": "deb822" in multi, "x_repo_id": x_repo_id(multi),
         "from": "repo.amd.com.toml [repository.multi-arch]", "source": multi["source"]},
        {"name": "stable.repo.amd.com", "base_url": base(stable["url"], "{directory}"),
         "key_url": stable["key"], "deb822": "deb822" in stable, "x_repo_id": x_repo_id(stable),
         "from": "repo.amd.com.toml [repository.stable]", "source": stable["source"]},
    ]  # fmt: skip
    streams = [
        {"name": "classic", "key_fingerprint": keys["radeon"]["fingerprint"],
         "pin_origin": classic["origin"],
         "from": "keys.toml [radeon]; repo.radeon.com.toml [repository]",
         "source": f"{keys['radeon']['fingerprint_source']} Origin: {classic['source']}"},
        {"name": "core-sdk", "key_fingerprint": keys["amd"]["fingerprint"],
         "pin_origin": amd["release_file"]["origin"],
         "from": "keys.toml [amd]; repo.amd.com.toml [release_file]",
         "source": f"{keys['amd']['fingerprint_source']}; Origin: "
         f"{amd['release_file']['source']} ({amd['release_file'].get('uncertain', '')})"},
    ]  # fmt: skip
    packages = amd["packages"]
    gfx_packages = [
        {"gfx": gfx, "from": "repo.amd.com.toml [packages]", "source": packages["gfx_source"]}
        for gfx in packages["gfx"]
    ]
    return {
        "repositories": repositories, "streams": streams,
        "publications": _classic_publications(radeon) + _core_sdk_publications(amd),
        "gfx_packages": gfx_packages,
    }  # fmt: skip


def _classic_publications(radeon: dict) -> list[dict]:
    """Per distro repo.radeon.com serves: its suite, first release, whether Instinct only."""
    suites, listing = radeon["suites"], radeon["listing"]
    first = radeon["release"][0]["version"]
    rows = []
    for distro, suite in suites.items():
        if " " not in distro:
            continue  # the table's own fields (source, noble_from)
        noble = suite == "noble"
        instinct = distro in listing["instinct_only"]
        source = [f"suite: {suites['source']}"]
        source += [f"first release: {suites['noble_from_source']}"] if noble else []
        source += [f"Instinct only: {listing['source']}"] if instinct else []
        rows.append({
            "stream": "classic", "distro": distro, "suite": suite, "directory": None,
            "first_release": suites["noble_from"] if noble else first, "instinct_only": instinct,
            "from": {"distro": "repo.radeon.com.toml [suites]",
                     "suite": "repo.radeon.com.toml [suites]",
                     "first_release": "repo.radeon.com.toml [suites] noble_from" if noble
                     else "repo.radeon.com.toml [[release]] (the first)",
                     "instinct_only": "repo.radeon.com.toml [listing]"},
            "source": "; ".join(source),
        })  # fmt: skip
    return rows


def _core_sdk_publications(amd: dict) -> list[dict]:
    """Per distro the Core SDK serves: directory, suite, first release, whether Instinct only."""
    directories, support = amd["directories"], amd["os_support"]
    multi, stable = amd["repository"]["multi-arch"], amd["repository"]["stable"]
    if multi["suite"] != stable["suite"]:
        raise MatrixDataError(
            f"repo.amd.com.toml: the repositories' suites differ ({multi['suite']!r}, "
            f"{stable['suite']!r}): a publication names one"
        )
    rows = []
    for distro, directory in directories.items():
        if distro == "source":
            continue
        instinct = distro in support["gfx"]
        source = [f"directory: {directories['source']}: {multi['source']}; {stable['source']}"]
        source += [f"suite: {amd['release_file']['suite_source']}"]
        source += [f"Instinct only: {support['source']}"] if instinct else []
        rows.append({
            "stream": "core-sdk", "distro": distro, "suite": multi["suite"],
            "directory": directory, "first_release": amd["release"][0]["version"],
            "instinct_only": instinct,
            "from": {"distro": "repo.amd.com.toml [directories]",
                     "suite": "repo.amd.com.toml [repository]; [release_file]",
                     "directory": "repo.amd.com.toml [directories]",
                     "first_release": "repo.amd.com.toml [[release]] (the first)",
                     "instinct_only": "repo.amd.com.toml [os_support]"},
            "source": "; ".join(source),
        })  # fmt: skip
    return rows
