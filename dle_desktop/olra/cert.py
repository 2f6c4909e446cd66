"""The self-signed certificate for the OLRA emulation's HTTPS port, made once and kept in the
data folder (`olra/certificate.pem`, and its private key `olra/private-key.pem`, 0600).

Like Obsidian's Local REST API plugin, the certificate names 127.0.0.1, ::1 and localhost and is
served at `/obsidian-local-rest-api.crt`; the browser only accepts it once the operating system
trusts it. It lasts 825 days (the longest Apple platforms accept) and is made again when fewer
than 30 days are left, or when the files are missing or unreadable (then it must be trusted
again)."""

from __future__ import annotations

import datetime
import ipaddress
import logging
from pathlib import Path

from dle_desktop.fileio import make_private_dir, write_private_atomic

log = logging.getLogger(__name__)

CERT_NAME = "certificate.pem"
KEY_NAME = "private-key.pem"
VALID_DAYS = 825
RENEW_DAYS = 30
COMMON_NAME = "DLE Desktop (Obsidian Local REST API emulation)"


def cert_dir(paths) -> Path:
    return Path(paths.data_dir) / "olra"


def cert_path(paths) -> Path | None:
    """The certificate's file (PEM) if one has been made, else None: what the app exports and
    what a browser or the OS must trust for HTTPS."""
    path = cert_dir(paths) / CERT_NAME
    return path if path.is_file() else None


def _still_good(cert_file: Path, key_file: Path) -> bool:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    except (OSError, ValueError, TypeError):
        return False
    left = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    return left > datetime.timedelta(days=RENEW_DAYS)


def ensure_certificate(paths) -> tuple[Path, Path]:
    """(certificate file, private key file), made now if missing, unreadable or near its end."""
    folder = make_private_dir(cert_dir(paths))
    cert_file, key_file = folder / CERT_NAME, folder / KEY_NAME
    if cert_file.is_file() and key_file.is_file() and _still_good(cert_file, key_file):
        return cert_file, key_file
    cert_pem, key_pem = generate_certificate()
    _write(key_file, key_pem)
    _write(cert_file, cert_pem)
    log.info("made a new self-signed certificate for the Obsidian REST emulation: %s", cert_file)
    return cert_file, key_file


def _write(path: Path, data: bytes) -> None:
    write_private_atomic(path, data)


def generate_certificate(now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """A new RSA-2048 key and a self-signed certificate for 127.0.0.1, ::1 and localhost (PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = now or datetime.datetime.now(datetime.UTC)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, COMMON_NAME),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "DLE Desktop"),
        ]
    )
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
                    x509.IPAddress(ipaddress.IPv6Address("::1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=True,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
