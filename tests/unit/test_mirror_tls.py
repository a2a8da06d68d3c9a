"""The fleet mirror over TLS and the credentials apt and pip get: `rocm-fleet mirror-ca`'s
files, their checks before any operation, what the mirror host and the hosts using it are
given (the CA pinned for the mirror alone: apt's per-host CaInfo, pip's --cert, curl's
--cacert), and secrets that never reach a command line, an error or pyinfra's output."""

from __future__ import annotations

import datetime
import os
import re
import shutil
from pathlib import Path

import pytest
from pyinfra.api import FileUploadCommand, StringCommand
from pyinfra.api.util import sha1_hash

from rocm_fleet.cli import main
from rocm_fleet.deploy.mirror import apt_mirror_conf, nginx_site
from rocm_fleet.model import paths
from rocm_fleet.model.config import ConfigError
from rocm_fleet.model.decisions import Mirror
from rocm_fleet.model.fleet import Fleet
from rocm_fleet.model.secrets import Secret, SecretError, read_secret
from rocm_fleet.model.tls import MirrorTls, TlsFileError, check_mirror_files, make_mirror_files
from unit.surveys import SurveyHost, fresh_survey, plan, script_call, unchecked, words

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}
ALICE = {"groups": ["video"], "users": {}}
ADDRESS = "10.0.0.5"
SECRET = "s3cr3t-Pa55w0rd-never-shown"


def fresh(data: dict, others: dict | None = None):
    survey = fresh_survey("debian-12", groups=ALICE)
    return plan(data, SurveyHost(survey), others)


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> MirrorTls:
    return make_mirror_files(tmp_path_factory.mktemp("tls"), [ADDRESS, "mirror.lan"]).tls


def mirror_data(tls: MirrorTls, **more) -> dict:
    return {**DATA, "ssh_hostname": ADDRESS, "rocm_mirror": "mirror1",
            "rocm_mirror_tls_ca": tls.ca, "rocm_mirror_tls_cert": tls.cert,
            "rocm_mirror_tls_key": tls.key, **more}  # fmt: skip


def every_text(planned) -> str:
    """Everything pyinfra would show or run for the plan: each command as it would be run
    (unmasked) and each operation's repr, arguments included."""
    out = []
    for op in planned.ops:
        out.append(op.name)
        out.append(repr(op.meta))
        for command in op.commands:
            out.append(repr(command))
            if isinstance(command, StringCommand):
                out.append(command.get_raw_value())
    return "\n".join(out)


# --- mirror-ca and the checks of its files -------------------------------------------------------


def test_mirror_ca_makes_a_ca_and_a_certificate_whose_keys_only_their_owner_reads(tmp_path, capsys):
    assert main(["mirror-ca", str(tmp_path / "tls"), ADDRESS, "mirror.lan"]) == 0
    printed = capsys.readouterr().out
    for name in ("ca.key", "mirror.key"):
        assert oct((tmp_path / "tls" / name).stat().st_mode & 0o777) == "0o600"
        assert (tmp_path / "tls" / name).read_text() not in printed  # never printed
    assert f'rocm_mirror_tls_cert = "{tmp_path}/tls/mirror.crt"' in printed
    files = MirrorTls(*(str(tmp_path / "tls" / n) for n in ("ca.crt", "mirror.crt", "mirror.key")))
    check_mirror_files(files, ADDRESS)
    check_mirror_files(files, "MIRROR.lan.")
    # Issuing again keeps the CA the hosts pin.
    ca = (tmp_path / "tls" / "ca.crt").read_bytes()
    assert main(["mirror-ca", str(tmp_path / "tls"), "10.0.0.6"]) == 0
    assert (tmp_path / "tls" / "ca.crt").read_bytes() == ca
    check_mirror_files(files, "10.0.0.6")
    assert main(["mirror-ca", str(tmp_path / "x"), "bad name!"]) == 4  # bad input (cli.exits)


def test_files_that_cannot_serve_the_mirror_are_refused_naming_the_setting(tls, tmp_path):
    with pytest.raises(
        TlsFileError, match=r"names mirror\.lan, 10\.0\.0\.5, not 10\.0\.0\.9"
    ) as error:
        check_mirror_files(tls, "10.0.0.9")
    assert error.value.key == "rocm_mirror_tls_cert"
    other = make_mirror_files(tmp_path / "other", [ADDRESS]).tls
    cases = [
        (MirrorTls(other.ca, tls.cert, tls.key), "rocm_mirror_tls_cert", "is not issued by"),
        (MirrorTls(tls.ca, tls.cert, other.key), "rocm_mirror_tls_key", "is not the key of"),
        (MirrorTls(tls.cert, tls.cert, tls.key), "rocm_mirror_tls_ca", "is not a CA"),
        (
            MirrorTls(tls.ca, str(tmp_path / "no.crt"), tls.key),
            "rocm_mirror_tls_cert",
            "can't read",
        ),
        (MirrorTls(tls.ca, tls.key, tls.key), "rocm_mirror_tls_cert", "holds no PEM certificate"),
    ]
    for files, key, message in cases:
        with pytest.raises(TlsFileError, match=message) as error:
            check_mirror_files(files, ADDRESS)
        assert error.value.key == key
    loose = tmp_path / "loose.key"
    shutil.copy(tls.key, loose)
    loose.chmod(0o644)
    with pytest.raises(TlsFileError, match=f"mode 0644\\): chmod 600 {loose}"):
        check_mirror_files(MirrorTls(tls.ca, tls.cert, str(loose)), ADDRESS)
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=900)
    with pytest.raises(TlsFileError, match="not now"):
        check_mirror_files(tls, ADDRESS, now=later)


def test_a_tls_mirror_is_reached_by_https_and_bad_files_stop_every_host_using_it(tls):
    fleet = Fleet({"node": {**DATA, "rocm_mirror": "mirror1"}, "mirror1": mirror_data(tls)})
    assert fleet.config("node").mirror == Mirror(
        f"https://{ADDRESS}:8080", "mirror1", None, False, tls.ca
    )
    assert fleet.config("mirror1").mirror.serves and fleet.config("mirror1").mirror.tls
    wrong = mirror_data(tls, ssh_hostname="10.0.0.9")
    for name in ("node", "mirror1"):
        with pytest.raises(ConfigError) as error:
            Fleet({"node": {**DATA, "rocm_mirror": "mirror1"}, "mirror1": wrong}).config(name)
        assert str(error.value).startswith("mirror1: inventory key 'rocm_mirror_tls_cert': ")
        assert "not 10.0.0.9, the address the hosts reach the mirror by" in str(error.value)
    half = {**DATA, "rocm_mirror": "mirror1", "rocm_mirror_tls_cert": tls.cert}
    with pytest.raises(ConfigError, match="'rocm_mirror_tls_ca' is required with rocm_mirror_t"):
        Fleet({"mirror1": half}).config("mirror1")
    v6 = mirror_data(tls, ssh_hostname="fd00::5")
    with pytest.raises(ConfigError, match="IPv6 address fd00::5"):
        Fleet({"mirror1": v6}).config("mirror1")
    # A mirror served elsewhere: its https:// URL, and the CA to pin for it.
    remote = {**DATA, "rocm_mirror": "https://m.lan:8443", "rocm_mirror_tls_ca": tls.ca}
    assert Fleet({"n": remote}).config("n").mirror.ca == tls.ca
    plain = {**remote, "rocm_mirror": "http://m.lan:8080"}
    with pytest.raises(ConfigError, match="is plain HTTP: name its https:// URL"):
        Fleet({"n": plain}).config("n")


def test_plain_http_mirrors_are_said_to_rest_on_signatures_and_pinned_hashes_alone(tls):
    from rocm_fleet.model.findings import _plain_mirror

    bundled = {"node": {**DATA, "rocm_mirror": "m"},
               "m": {**DATA, "ssh_hostname": ADDRESS, "rocm_mirror_bundle": "/b"}}  # fmt: skip
    warnings = _plain_mirror(Fleet(bundled).config("node")).warnings
    assert warnings == [
        "the fleet mirror http://10.0.0.5:8080 is plain HTTP: integrity rests on AMD's "
        "signatures and pinned hashes alone; `rocm-fleet mirror-ca` and "
        "rocm_mirror_tls_ca/_cert/_key give it TLS"
    ]
    over_tls = Fleet({"node": {**DATA, "rocm_mirror": "mirror1"}, "mirror1": mirror_data(tls)})
    none = _plain_mirror(over_tls.config("node")).warnings
    assert none == []


# --- what the hosts get ---------------------------------------------------------------------


def upload_start(command, path: str, mode: str) -> str:
    """The private directory ``uploaded_file``'s first command makes beside ``path``: a
    hidden name of ``path``'s own with twelve random hex digits."""
    name, (target, made, private) = script_call(command)
    assert (name, target, made) == ("upload-start", path, mode)
    directory, file = path.rsplit("/", 1)
    assert re.fullmatch(rf"{re.escape(directory)}/\.{re.escape(file)}\.[0-9a-f]{{12}}", private)
    return private


def test_the_mirror_host_serves_https_with_its_key_uploaded_root_only(tls):
    planned = fresh(mirror_data(tls, rocm_mirror="node"))
    names = [n for n in planned.names if n.startswith("Fleet mirror")]
    assert names == [
        "Fleet mirror | Pin the fleet mirror's CA",
        "Fleet mirror | Make apt check the mirror against its CA",
        "Fleet mirror | Install nginx to serve the mirror",
        "Fleet mirror | Drop the bundle (a live mirror now)",
        "Fleet mirror | Give nginx the mirror's certificate",
        "Fleet mirror | Give nginx the mirror's private key (root only)",
        "Fleet mirror | Configure nginx to serve the mirror",
        "Fleet mirror | Run nginx with the mirror's configuration",
    ]
    (cert,) = planned.find("Give nginx the mirror's certificate").commands
    assert script_call(cert)[1] == [paths.MIRROR_CERT, "644", Path(tls.cert).read_text()]
    key_commands = planned.find("Give nginx the mirror's private key").commands
    (upload,) = [c for c in key_commands if isinstance(c, FileUploadCommand)]
    assert upload.src.getvalue() == Path(tls.key).read_bytes()
    # Created 0600 in a new private directory beside the key (a name drawn for this upload)
    # before a byte is uploaded, then renamed into place.
    private = upload_start(key_commands[0], paths.MIRROR_KEY, "600")
    assert upload.dest == f"{private}/new"
    assert words(key_commands[-1])[-7:] == [
        "mv", "-Tf", upload.dest, paths.MIRROR_KEY, "&&", "rmdir", private,
    ]  # fmt: skip
    # The key is in no command and no operation's repr.
    key_text = Path(tls.key).read_text().splitlines()[1]
    assert key_text not in every_text(planned)
    (site,) = planned.find("Configure nginx").commands
    content = script_call(site)[1][2]
    assert f"    listen {ADDRESS}:8080 ssl;\n" in content
    assert f"    ssl_certificate_key {paths.MIRROR_KEY};\n" in content
    assert nginx_site(8080, True, [], listen=[ADDRESS], tls=True).count(" ssl;") == 1


def test_hosts_pin_the_mirrors_ca_for_it_alone_and_drop_trusted_host(tls):
    planned = fresh({**DATA, "rocm_mirror": "mirror1"}, {"mirror1": mirror_data(tls)})
    ca_commands = planned.find("Pin the fleet mirror's CA").commands
    (upload,) = [c for c in ca_commands if isinstance(c, FileUploadCommand)]
    assert upload.src.getvalue() == Path(tls.ca).read_bytes()
    assert upload.dest == f"{upload_start(ca_commands[0], paths.MIRROR_CA, '644')}/new"
    (conf,) = planned.find("Make apt check the mirror against its CA").commands
    assert script_call(conf)[1] == [paths.APT_MIRROR_CONF, "644", apt_mirror_conf(ADDRESS)]
    assert f'Acquire::https::{ADDRESS}::CaInfo "{paths.MIRROR_CA}";' in apt_mirror_conf(ADDRESS)
    # Before anything is fetched from the mirror.
    assert planned.names.index("Fleet mirror | Make apt check the mirror against its CA") < (
        planned.names.index("ROCm apt repository | Install AMD's signing key (fingerprint checked)")
    )
    (source,) = planned.find("Point apt at the ROCm release").commands
    assert (
        f"https://{ADDRESS}:8080/repo.radeon.com/rocm/apt/6.4.3 jammy" in script_call(source)[1][2]
    )
    (key,) = planned.find("Install AMD's signing key").commands
    assert script_call(key)[1][3:] == ["", "", paths.MIRROR_CA]  # curl --cacert
    (pip,) = planned.find("Install the torch wheels").commands
    pip = words(pip)
    assert pip[pip.index("--cert") + 1] == paths.MIRROR_CA
    assert "--trusted-host" not in pip
    # The mirror is addressed by IP: pip 24.2+ verifies it the legacy way (pypa/pip#12906).
    assert "--use-deprecated=legacy-certs" in " ".join(pip)
    assert f"https://{ADDRESS}:8080/download.pytorch.org/whl/rocm6.4" in pip


def test_a_mirror_that_drops_tls_takes_its_files_and_the_pins_away(tls):
    survey = fresh_survey("debian-12", groups=ALICE)
    for path in (paths.MIRROR_CA, paths.APT_MIRROR_CONF, paths.MIRROR_CERT, paths.MIRROR_KEY):
        survey.files[path] = {"mode": "644", "sha256": "0" * 64, "mtime": 1}
    planned = plan({**DATA, "ssh_hostname": ADDRESS, "rocm_mirror": "node"}, SurveyHost(survey))
    for name in ("Remove apt's TLS settings for the mirror", "Remove the fleet mirror's CA",
                 "Remove the mirror's certificate", "Remove the mirror's private key"):  # fmt: skip
        (command,) = planned.find(name).commands
        assert unchecked(words(command))[:2] == ["rm", "-f"]


# --- secrets ------------------------------------------------------------------------------------


def test_secrets_come_from_a_private_file_or_the_environment_and_are_never_shown(tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine pypi.lan login ci password {SECRET}")
    netrc.chmod(0o600)
    secret = read_secret(str(netrc))
    assert secret.reveal().endswith(f"{SECRET}\n")
    assert SECRET not in repr(secret) + str(secret) + repr([secret])
    assert read_secret("env:NETRC_TEXT", {"NETRC_TEXT": f"machine a login b password {SECRET}"})
    netrc.chmod(0o640)
    with pytest.raises(SecretError, match="readable by others \\(mode 0640\\): chmod 600"):
        read_secret(str(netrc))
    with pytest.raises(SecretError, match="the environment variable NOPE is not set"):
        read_secret("env:NOPE", {})
    with pytest.raises(SecretError) as error:
        read_secret("env:X", {"X": SECRET})  # a password alone is not a netrc
    assert "holds no 'machine HOST login USER password SECRET' line" in str(error.value)
    assert SECRET not in str(error.value)


def test_a_bad_secret_source_stops_the_host_naming_the_key_and_not_the_secret(tmp_path):
    loose = tmp_path / "auth"
    loose.write_text(f"machine repo.lan login u password {SECRET}\n")
    loose.chmod(0o644)
    fleet = Fleet({"node": {**DATA, "rocm_apt_auth": str(loose)}})
    with pytest.raises(ConfigError) as error:
        fleet.config("node")
    assert str(error.value).startswith("node: inventory key 'rocm_apt_auth': ")
    assert SECRET not in str(error.value)
    with pytest.raises(ConfigError, match="expected the absolute path of a file of mode 0600"):
        Fleet({"node": {**DATA, "rocm_pip_netrc": "netrc"}}).config("node")


def test_apt_and_pip_get_their_credentials_root_only_through_an_upload(tmp_path, monkeypatch):
    auth = tmp_path / "auth"
    auth.write_text(f"machine repo.lan/rocm login u password {SECRET}\n")
    os.chmod(auth, 0o600)
    monkeypatch.setenv("ROCM_FLEET_TEST_NETRC", f"machine pypi.lan login ci password {SECRET}")
    data = {**DATA, "rocm_apt_auth": str(auth), "rocm_pip_netrc": "env:ROCM_FLEET_TEST_NETRC"}
    planned = fresh(data)
    assert SECRET not in every_text(planned)
    for name, path in (("Give apt the repository's credentials", paths.APT_AUTH),
                       ("Give pip the wheel index's credentials", paths.PIP_NETRC)):  # fmt: skip
        commands = planned.find(name).commands
        (upload,) = [c for c in commands if isinstance(c, FileUploadCommand)]
        assert SECRET in upload.src.getvalue().decode()
        assert upload.dest == f"{upload_start(commands[0], path, '600')}/new"
        # With _sudo, pyinfra uploads through a temporary file of the SSH user: that one is
        # made 0600 by that user (no sudo) beforehand, and removed after.
        private = commands[1]
        assert private.connector_arguments["_sudo"] is False
        assert f": > {upload.remote_temp_filename}" in words(private)[-1]
        # A random name, not pyinfra's hash of the path, that another user could foresee.
        assert sha1_hash(path) not in upload.remote_temp_filename
        assert words(private)[-1].startswith("umask 077 && ")
        assert upload.remote_temp_filename in words(commands[-1])
    assert planned.names.index("ROCm apt repository | Give apt the repository's credentials "
                               "(root only)") < planned.names.index(
        "ROCm apt repository | Refresh apt lists after a source or key change")  # fmt: skip
    (pip,) = planned.find("Install the torch wheels").commands
    assert f"NETRC={paths.PIP_NETRC}" in words(pip)
    # Unset: the files go (planned only where they are).
    survey = fresh_survey("debian-12", groups=ALICE)
    for path in (paths.APT_AUTH, paths.PIP_NETRC):
        survey.files[path] = {"mode": "600", "sha256": "0" * 64, "mtime": 1}
    dropped = plan(DATA, SurveyHost(survey))
    assert unchecked(words(dropped.find("Remove apt's credentials").commands[0])) == [
        "rm", "-f", paths.APT_AUTH
    ]  # fmt: skip
    assert dropped.find("Remove pip's credentials").commands
    assert Secret("x") == Secret("x") and "x" not in repr(Secret("x"))
