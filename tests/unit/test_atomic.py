"""The one writer of the controller's local files (``rocm_fleet.atomic``): whole or not at
all, in its mode from the first byte, no link followed, nothing else in the directory
touched."""

import os
import stat

import pytest

from rocm_fleet import atomic
from rocm_fleet.atomic import write_atomically


def _listing(directory):
    return {
        p.name: (p.read_bytes() if p.is_file() else os.readlink(p)) for p in directory.iterdir()
    }


def test_the_file_is_written_whole_and_the_directorys_other_files_are_untouched(tmp_path):
    (tmp_path / "other.json").write_text("{}\n")
    (tmp_path / "state.json").write_text("old\n")
    os.symlink("other.json", tmp_path / "alias")
    before = _listing(tmp_path)
    write_atomically(tmp_path / "state.json", "new\n")
    after = _listing(tmp_path)
    assert after == {**before, "state.json": b"new\n"}  # no temporary file left either
    write_atomically(tmp_path / "bytes.bin", b"\x00\xff")
    assert (tmp_path / "bytes.bin").read_bytes() == b"\x00\xff"


def test_the_mode_is_the_final_one_from_the_files_creation(tmp_path, monkeypatch):
    created = []
    real_open = os.open

    def spy(path, flags, mode=0o777, *args, **kwargs):
        descriptor = real_open(path, flags, mode, *args, **kwargs)
        if flags & os.O_CREAT:
            created.append((flags, stat.S_IMODE(os.fstat(descriptor).st_mode)))
        return descriptor

    monkeypatch.setattr(atomic.os, "open", spy)
    write_atomically(tmp_path / "key", b"secret", mode=0o600)
    ((flags, mode),) = created
    assert mode == 0o600  # before the first byte: never readable by others
    for flag in (os.O_CREAT, os.O_EXCL, os.O_NOFOLLOW):
        assert flags & flag
    assert stat.S_IMODE((tmp_path / "key").stat().st_mode) == 0o600


def test_the_mode_is_exact_whatever_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        write_atomically(tmp_path / "metrics.prom", "x 1\n")  # read by node_exporter's user
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "metrics.prom").stat().st_mode) == 0o644


def test_a_link_planted_at_the_target_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "elsewhere" / "victim"
    victim.parent.mkdir()
    victim.write_text("theirs\n")
    target = tmp_path / "settings.json"
    os.symlink(victim, target)
    write_atomically(target, "ours\n", mode=0o600)
    assert victim.read_text() == "theirs\n"
    assert not target.is_symlink() and target.read_text() == "ours\n"


def test_a_link_planted_at_the_temporary_name_is_never_opened(tmp_path, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("theirs\n")
    planted = tmp_path / ".settings.json.planted"
    os.symlink(victim, planted)
    names = iter(["planted", "fresh"])
    monkeypatch.setattr(atomic, "token_hex", lambda _: next(names))
    write_atomically(tmp_path / "settings.json", "ours\n")
    assert victim.read_text() == "theirs\n"
    assert planted.is_symlink() and os.readlink(planted) == str(victim)  # not ours to remove
    assert (tmp_path / "settings.json").read_text() == "ours\n"
    assert not (tmp_path / ".settings.json.fresh").exists()


def test_every_temporary_name_taken_is_an_error_not_a_loop(tmp_path, monkeypatch):
    os.symlink(tmp_path / "victim", tmp_path / ".f.taken")
    monkeypatch.setattr(atomic, "token_hex", lambda _: "taken")
    with pytest.raises(FileExistsError, match="no free temporary name for f"):
        write_atomically(tmp_path / "f", "x")
    assert not (tmp_path / "victim").exists() and not (tmp_path / "f").exists()


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "lock.json"
    target.write_text("old\n")

    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, "new\n")
    assert [p.name for p in tmp_path.iterdir()] == ["lock.json"]
    assert target.read_text() == "old\n"


def test_exclusive_writes_only_where_nothing_is_and_follows_no_link(tmp_path):
    key = tmp_path / "key"
    write_atomically(key, b"first", mode=0o600, exclusive=True)
    with pytest.raises(FileExistsError):
        write_atomically(key, b"second", mode=0o600, exclusive=True)
    assert key.read_bytes() == b"first"
    dangling = tmp_path / "dangling"
    os.symlink(tmp_path / "created-through-the-link", dangling)
    with pytest.raises(FileExistsError):
        write_atomically(dangling, b"x", mode=0o600, exclusive=True)
    assert not (tmp_path / "created-through-the-link").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "key"]
