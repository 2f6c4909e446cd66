"""HTTPS with the certificate the app makes once: trusted through the exported file, 127.0.0.1
and localhost in its names, the key private, kept across restarts, made again near its end."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl

import httpx
import pytest
from cryptography import x509

from dle_desktop.olra import cert as cert_module
from dle_desktop.olra import cert_path
from dle_desktop.state.paths import AppPaths


def trust(path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(path))


def test_https_serves_the_vault_with_the_generated_certificate(olra, tmp_path):
    s = olra({"a.md": "hello"}, https=True, https_port=0)
    runner = s.runner
    paths = AppPaths(tmp_path / "data", tmp_path / "data")
    cert = cert_path(paths)
    assert cert is not None and cert == runner.cert_file
    with httpx.Client(base_url=runner.https_url, verify=trust(cert)) as client:
        assert client.get("/vault/", headers=s.auth()).json() == {"files": ["a.md"]}
        assert client.get("/vault/a.md", headers=s.auth("text/markdown")).text == "hello"
        assert (
            client.put("/vault/b.md", content="b", headers=s.auth(**{"Content-Type": "text/markdown"})).status_code
            == 204
        )
        exported = client.get("/obsidian-local-rest-api.crt")  # exempt from auth, as in OLRA
        assert exported.status_code == 200 and exported.content == cert.read_bytes()
    # The same name works as localhost, and plain HTTP keeps working next to it.
    with httpx.Client(base_url=f"https://localhost:{runner.https_port}", verify=trust(cert)) as client:
        assert client.get("/vault/b.md", headers=s.auth()).text == "b"
    assert s.get("/vault/b.md").text == "b"
    assert s.client.get("/obsidian-local-rest-api.crt").content == cert.read_bytes()
    # Not trusted, it is refused: it really is TLS with our own certificate.
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{runner.https_url}/", verify=True)


def test_certificate_names_key_mode_and_reuse(tmp_path):
    paths = AppPaths(tmp_path / "d", tmp_path / "d").ensure()
    assert cert_path(paths) is None
    cert_file, key_file = cert_module.ensure_certificate(paths)
    assert cert_path(paths) == cert_file
    if os.name == "posix":
        assert key_file.stat().st_mode & 0o777 == 0o600
        assert cert_file.stat().st_mode & 0o777 == 0o600
    cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert ipaddress.ip_address("127.0.0.1") in san.get_values_for_type(x509.IPAddress)
    days = (cert.not_valid_after_utc - cert.not_valid_before_utc).days
    assert 800 <= days <= 826
    first = cert_file.read_bytes()
    assert cert_module.ensure_certificate(paths)[0].read_bytes() == first  # made once, then kept


def test_certificate_is_made_again_near_its_end_or_when_broken(tmp_path):
    paths = AppPaths(tmp_path / "d", tmp_path / "d").ensure()
    cert_file, key_file = cert_module.ensure_certificate(paths)
    old_pem, old_key = cert_module.generate_certificate(
        now=datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=cert_module.VALID_DAYS - 10)
    )
    cert_file.write_bytes(old_pem)
    key_file.write_bytes(old_key)
    assert cert_module.ensure_certificate(paths)[0].read_bytes() != old_pem
    cert_file.write_text("garbage")
    fresh = cert_module.ensure_certificate(paths)[0].read_bytes()
    assert fresh.startswith(b"-----BEGIN CERTIFICATE-----")
