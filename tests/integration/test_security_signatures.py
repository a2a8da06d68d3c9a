"""InRelease files an attacker replays or forges against the bundle's check, each made by
gpg with throwaway keys: a key that has expired, a revoked key, an expired signature, a
SHA-1 signature, a stale ``Valid-Until``, another suite's InRelease. gpgv accepts the first
three with exit status 0; each is refused with its reason, as apt refuses it."""

# ruff: noqa: F811  (the fixtures of test_bundle, imported)

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

import pytest

from rocm_fleet.bundle.build import Plan, make_bundle
from rocm_fleet.upstream.aptrepo import (
    RepositoryError,
    SignatureError,
    check_release,
    parse_release,
    policy_refusal,
    signed_text,
)
from rocm_fleet.upstream.http import Fetcher
from rocm_fleet.upstream.manifest import BundleError
from unit.bundle.test_bundle import Quiet, needs_of, signer, upstream  # noqa: F401  (fixtures)
from unit.gpgkeys import run_gpg

RELEASE = "Origin: repo.radeon.com\nSuite: jammy\nCodename: jammy\nSHA256:\n"
PAST = "20200101T000000!"  # gpg's --faked-system-time: keys and signatures made in 2020


class Keys:
    """A gpg home with one signing key made at ``made`` (None: now) expiring ``expire``."""

    def __init__(self, home: Path, made: str | None = None, expire: str = "never"):
        home.mkdir(mode=0o700)
        self.home = home
        self.gpg("--quick-gen-key", "attack <attack@invalid>", "ed25519", "sign", expire,
                 at=made)  # fmt: skip
        listing = self.gpg("--with-colons", "--list-keys").stdout.decode()
        self.fingerprint = next(
            line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")
        )

    def gpg(self, *args: str, at: str | None = None, data: bytes | None = None):
        faked = ("--faked-system-time", at) if at else ()
        return run_gpg(self.home, *faked, *args, data=data)

    def sign(self, text: str, *args: str, at: str | None = None) -> bytes:
        return self.gpg("--clearsign", *args, at=at, data=text.encode()).stdout

    def public(self) -> bytes:
        return self.gpg("--armor", "--export").stdout

    def revoke(self) -> None:
        """Import the revocation certificate gpg made with the key (its first line is
        escaped with a colon so it isn't imported by accident)."""
        (certificate,) = (self.home / "openpgp-revocs.d").iterdir()
        text = certificate.read_text().replace(":-----BEGIN", "-----BEGIN")
        self.gpg("--import", data=text.encode())

    def close(self) -> None:
        subprocess.run(["gpgconf", "--homedir", str(self.home), "--kill", "all"], check=False)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    base = tmp_path_factory.mktemp("attack-keys")
    made = {
        "good": Keys(base / "good"),
        "expired": Keys(base / "expired", made=PAST, expire="1y"),
        "old": Keys(base / "old", made=PAST),
        "revoked": Keys(base / "revoked"),
    }
    yield made
    for key in made.values():
        key.close()


def refusal(inrelease: bytes, key: bytes) -> str:
    with pytest.raises(RepositoryError) as caught:
        signed_text(inrelease, key, "https://repo.example/dists/jammy/InRelease")
    message = str(caught.value)
    assert message.startswith("https://repo.example/dists/jammy/InRelease: ")
    assert "\n" not in message
    return message


def test_a_good_signature_verifies_and_its_release_is_checked(keys):
    good = keys["good"]
    text = signed_text(good.sign(RELEASE), good.public(), "InRelease")
    check_release(parse_release(text).fields, "InRelease", "jammy")


def test_a_signature_by_a_key_that_has_expired_is_refused(keys):
    expired = keys["expired"]
    # Signed in 2020 while the key was valid; it expired in 2021.
    inrelease = expired.sign(RELEASE, at="20200601T000000!")
    assert "expired" in refusal(inrelease, expired.public())
    assert "EXPKEYSIG" in refusal(inrelease, expired.public())


def test_a_signature_by_a_revoked_key_is_refused(keys):
    revoked = keys["revoked"]
    inrelease = revoked.sign(RELEASE)  # made before the key was revoked
    revoked.revoke()
    assert "REVKEYSIG" in refusal(inrelease, revoked.public())


def test_an_expired_signature_is_refused(keys):
    old = keys["old"]
    inrelease = old.sign(RELEASE, "--default-sig-expire", "1d", at="20200601T000000!")
    assert "EXPSIG" in refusal(inrelease, old.public())


def test_a_sha1_signature_is_refused_as_sqv_refuses_it(keys):
    good = keys["good"]
    inrelease = good.sign(RELEASE, "--digest-algo", "SHA1")
    assert "uses SHA-1" in refusal(inrelease, good.public())
    # SHA-512 is fine.
    signed_text(good.sign(RELEASE, "--digest-algo", "SHA512"), good.public(), "InRelease")


def test_a_tampered_text_and_a_foreign_key_are_refused(keys):
    good, other = keys["good"], keys["old"]
    inrelease = good.sign(RELEASE)
    assert "bad" in refusal(inrelease.replace(b"jammy", b"noble", 1), good.public())
    assert "no good signature" in refusal(inrelease, other.public())


def test_a_stale_valid_until_is_refused(keys):
    good = keys["good"]
    text = RELEASE.replace("SHA256:", "Valid-Until: Sat, 01 Jan 2022 00:00:00 UTC\nSHA256:")
    fields = parse_release(signed_text(good.sign(text), good.public(), "InRelease")).fields
    with pytest.raises(SignatureError, match=r"expired on Sat, 01 Jan 2022 .*stale copy"):
        check_release(fields, "InRelease", "jammy")
    later = datetime.datetime(2021, 6, 1, tzinfo=datetime.UTC)
    check_release(fields, "InRelease", "jammy", now=later)  # still valid then
    with pytest.raises(SignatureError, match="unreadable Valid-Until"):
        check_release({**fields, "Valid-Until": "soon"}, "InRelease", "jammy")


def test_another_suites_inrelease_is_refused(keys):
    good = keys["good"]
    text = RELEASE.replace("jammy", "noble")
    fields = parse_release(signed_text(good.sign(text), good.public(), "InRelease")).fields
    with pytest.raises(SignatureError, match=r"signed for noble / noble, not jammy"):
        check_release(fields, "InRelease", "jammy")
    with pytest.raises(SignatureError, match=r"signed for no suite, not jammy"):
        check_release({"Origin": "x"}, "InRelease", "jammy")
    check_release({"Suite": "stable", "Codename": "x"}, "InRelease", "stable")


def test_status_lines_are_read_as_apt_reads_them():
    fpr = "C306AC8AAED302E247FA9D6154683A27DAD08E80"
    valid = f"[GNUPG:] VALIDSIG {fpr} 2026-12-01 1796135401 0 4 0 22 8 01 {fpr}"
    good = "[GNUPG:] GOODSIG 54683A27DAD08E80 x"
    assert policy_refusal(f"{good}\n{valid}\n") is None
    assert "no good signature" in policy_refusal(valid)
    assert "no good signature" in policy_refusal(good)
    assert "MD5" in policy_refusal(f"{good}\n{valid.replace(' 22 8 ', ' 22 1 ')}")
    assert "RIPEMD-160" in policy_refusal(f"{good}\n{valid.replace(' 22 8 ', ' 22 3 ')}")
    assert "hash algorithm 99" in policy_refusal(f"{good}\n{valid.replace(' 22 8 ', ' 22 99 ')}")
    assert "no good signature" in policy_refusal(
        "[GNUPG:] ERRSIG 1 22 8 01 0 9\n[GNUPG:] NO_PUBKEY 1"
    )


def test_the_bundle_refuses_another_suites_inrelease(upstream, signer, tmp_path):
    home, _armored, fingerprint = signer
    dist = upstream.root / "rocm/apt/6.4.3/dists/jammy"
    release = (dist / "Release").read_text().replace("jammy", "noble")
    (dist / "Release").write_text(release)
    run_gpg(home, "--local-user", fingerprint, "--clearsign", "-o", str(dist / "InRelease"),
            str(dist / "Release"))  # fmt: skip
    plan = Plan()
    plan.add("node1", needs_of(upstream, signer), {})
    out = tmp_path / "bundle"
    with pytest.raises(BundleError, match=r"InRelease: signed for noble / noble, not jammy"):
        make_bundle(plan, out, Fetcher(progress=Quiet(), retries=0))
    assert not list(out.rglob("InRelease"))


def test_a_machine_without_gpgv_says_so_instead_of_failing_with_a_traceback(monkeypatch):
    """Debian 13's apt depends on sqv, not gpgv: a controller or node without gpgv can't
    verify an InRelease, and says what to install; it never takes the text unverified."""
    from rocm_fleet.upstream import aptrepo

    def no_gpgv(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "gpgv")

    monkeypatch.setattr(aptrepo.subprocess, "run", no_gpgv)
    with pytest.raises(SignatureError, match=r"gpgv is not installed \(apt-get install gpgv\)"):
        aptrepo.signed_text(b"signed", b"key", "https://repo.example/dists/noble/InRelease")
