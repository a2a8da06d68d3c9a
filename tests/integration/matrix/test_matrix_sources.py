"""The tests of tests/unit/matrix/test_matrix_sources.py that start a process or a loopback
server (the integration tier; the pure ones stay there)."""

from __future__ import annotations

import pytest

from integration.test_security_limits import hostile
from rocm_fleet.matrix import inputs
from rocm_fleet.matrix.pytorch_tables import read_listing


def test_a_listing_url_is_read_over_verified_tls_only():
    with hostile() as url:  # a plain-HTTP server: no TLS, no certificate to verify
        https = url.replace("http://", "https://", 1) + "/whl/rocm6.3/torch/"
        with pytest.raises(inputs.MatrixDataError, match=r"listing https://127\.0\.0\.1"):
            read_listing(https)
        with pytest.raises(inputs.MatrixDataError, match="over https only"):
            read_listing(url + "/whl/rocm6.3/torch/")
