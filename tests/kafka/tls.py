"""TLS material for a test broker, made with the JDK's keytool: a CA, a broker certificate for
127.0.0.1 signed by it, the broker's keystore and truststore, and the CA as PEM for clients."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from deploy.kafka.devkafka import SaslSsl

VALIDITY_DAYS = "2"
SAN = "SAN=ip:127.0.0.1,dns:localhost"


def keytool(*args: str) -> None:
    tool = shutil.which("keytool")
    if tool is None:
        pytest.skip("keytool not found: a JDK is needed to make the broker's keystores")
    done = subprocess.run([tool, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"keytool {' '.join(args[:1])} failed:\n{done.stdout}{done.stderr}")


def make_sasl_ssl(directory: Path, users: dict[str, str], password: str) -> SaslSsl:
    """Keystores under ``directory`` (stores locked with ``password``) and SASL ``users``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, broker = directory / "ca.p12", directory / "broker.p12"
    truststore, ca_pem = directory / "truststore.p12", directory / "ca.pem"
    csr, signed = directory / "broker.csr", directory / "broker.pem"
    store = ("-storetype", "PKCS12", "-storepass", password)
    keytool("-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048",
            "-dname", "CN=spotsched test CA", "-ext", "bc:c", "-ext", "ku:c=keyCertSign,cRLSign",
            "-validity", VALIDITY_DAYS, "-keystore", str(ca), *store)
    keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", str(ca), *store,
            "-file", str(ca_pem))
    keytool("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048",
            "-dname", "CN=localhost", "-ext", SAN, "-validity", VALIDITY_DAYS,
            "-keystore", str(broker), *store)
    keytool("-certreq", "-alias", "broker", "-keystore", str(broker), *store, "-file", str(csr))
    keytool("-gencert", "-alias", "ca", "-keystore", str(ca), *store, "-infile", str(csr),
            "-outfile", str(signed), "-rfc", "-ext", SAN, "-ext", "eku=serverAuth",
            "-ext", "ku:c=digitalSignature,keyEncipherment", "-validity", VALIDITY_DAYS)
    for alias, certificate, keystore in (("ca", ca_pem, broker), ("broker", signed, broker),
                                         ("ca", ca_pem, truststore)):
        keytool("-importcert", "-noprompt", "-alias", alias, "-file", str(certificate),
                "-keystore", str(keystore), *store)
    return SaslSsl(keystore=broker, truststore=truststore, store_password=password,
                   ca_file=ca_pem, users=users)
