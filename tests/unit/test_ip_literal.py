"""``grammar.ip_literal``: the one "parses as an IP address" check (the mirror's access list,
pip's certificate choice, ``mirror-ca``'s names); ``grammar.ip_address`` adds the normal form."""

import pytest

from rocm_fleet.model import grammar


@pytest.mark.parametrize("value", ["10.0.0.5", "fd00::5", "FD00:0::5", "::ffff:10.0.0.5", "::"])
def test_any_form_ipaddress_reads_is_a_literal(value):
    assert grammar.ip_literal(value)


@pytest.mark.parametrize(
    "value",
    ["mirror.lan", "10.0.0.256", "10.0.0.5/24", "[fd00::5]", "", None, 167772165, b"\n\0\0\5"],
)
def test_names_networks_brackets_and_non_strings_are_not(value):
    assert not grammar.ip_literal(value)


@pytest.mark.parametrize(
    ("value", "normal"), [("fd00::5", True), ("FD00:0::5", False), ("10.0.0.5", True)]
)
def test_ip_address_is_the_literal_in_normal_form(value, normal):
    assert grammar.ip_literal(value) and grammar.ip_address(value) is normal
