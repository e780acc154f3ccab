//! The embedded API is served over HTTPS: kubectl sends a bearer token only over TLS. A CA
//! is made on first start and kept in the database (so kubeconfigs stay valid across
//! restarts); the server certificate is signed by it on every start, for the names in use.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use app::ssr::db::Db;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

const CA_CERT: &str = "embedded_ca_cert";
const CA_KEY: &str = "embedded_ca_key";

/// The CA (trusted by kubeconfigs) and this start's server certificate and key, as PEM.
pub struct Pki {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// The stored CA certificate, once a server has started.
pub async fn ca_pem(db: &Db) -> anyhow::Result<Option<String>> {
    db.setting(CA_CERT).await.context("could not read the CA")
}

fn ca_params() -> anyhow::Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, "lbdesk embedded API CA");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    Ok(params)
}

/// The stored CA (created when missing), and a server certificate for `localhost`, the
/// loopback addresses and `extra`.
pub async fn load_or_create(db: &Db, extra: &[IpAddr]) -> anyhow::Result<Pki> {
    let (ca_pem, ca_key) = match (db.setting(CA_CERT).await?, db.setting(CA_KEY).await?) {
        (Some(cert), Some(key)) => (cert, KeyPair::from_pem(&key).context("the stored CA key is unreadable")?),
        _ => {
            let key = KeyPair::generate()?;
            let cert = ca_params()?.self_signed(&key)?;
            db.set_setting(CA_KEY, &key.serialize_pem()).await?;
            db.set_setting(CA_CERT, &cert.pem()).await?;
            (cert.pem(), key)
        }
    };
    let issuer = Issuer::new(ca_params()?, ca_key);
    let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
    params.distinguished_name.push(DnType::CommonName, "lbdesk embedded API");
    let mut ips: Vec<IpAddr> = vec!["127.0.0.1".parse()?, "::1".parse()?];
    ips.extend(extra.iter().filter(|ip| !ip.is_unspecified()));
    params.subject_alt_names.extend(ips.into_iter().map(SanType::IpAddress));
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Pki { ca_pem, cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// A rustls server configuration (ring provider) for the certificate.
pub fn server_config(pki: &Pki) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let certs = certificates(pki.cert_pem.as_bytes()).context("the server certificate")?;
    let key = private_key(pki.key_pem.as_bytes()).context("the server key")?;
    server_config_for(certs, key)
}

/// The certificates of a PEM file, the server's first, then the chain up to its CA.
/// The server configuration of a certificate chain and key read from files, each given with
/// the flag that named it (an error names the flag at fault).
pub fn from_files(cert: (&str, &Path), key: (&str, &Path)) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let read = |(flag, path): (&str, &Path)| {
        std::fs::read(path).with_context(|| format!("{flag} {}: could not read the file", path.display()))
    };
    let certs = certificates(&read(cert)?).with_context(|| format!("{} {}", cert.0, cert.1.display()))?;
    let private_key = private_key(&read(key)?).with_context(|| format!("{} {}", key.0, key.1.display()))?;
    server_config_for(certs, private_key)
        .with_context(|| format!("{} {} and {} {}", cert.0, cert.1.display(), key.0, key.1.display()))
}

pub fn certificates(pem: &[u8]) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>().context("unreadable PEM")?;
    anyhow::ensure!(!certs.is_empty(), "no certificate in it (expected PEM \"BEGIN CERTIFICATE\")");
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn private_key(pem: &[u8]) -> anyhow::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_slice(pem).context("no private key in it (expected PEM \"BEGIN … PRIVATE KEY\")")
}

/// A rustls server configuration (ring provider) serving `certs` with `key`.
pub fn server_config_for(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    server_config_with_clients(certs, key, None)
}

/// A rustls server configuration (ring provider) serving `certs` with `key`; with `clients`,
/// only to clients presenting a certificate that these CA certificates signed (mutual TLS).
pub fn server_config_with_clients(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    clients: Option<Vec<CertificateDer<'static>>>,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match clients {
        None => builder.with_no_client_auth(),
        Some(cas) => {
            let mut roots = rustls::RootCertStore::empty();
            for ca in cas {
                roots.add(ca).context("not a CA certificate")?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .context("the client CA")?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder.with_single_cert(certs, key).context("the certificate does not match its key")?;
    Ok(Arc::new(config))
}
