//! TLS towards a user's service: a rustls client (system roots, or a CA
//! file; a client certificate for mTLS; an explicit, loud skip of
//! verification) and the connector that dials TCP and then shakes hands,
//! naming what to give when the handshake fails.
//!
//! * [`connector`] — the connector and its stream, plain or TLS.

mod connector;
mod server;

pub use connector::{ServiceConnector, ServiceStream};
pub use server::server_config;

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// `tls:` as written: how to trust the service and how to show who we are.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsOptions {
    /// PEM file of the CA(s) to trust instead of the system's roots,
    /// relative to the file that names it.
    #[serde(default)]
    pub ca_file: Option<String>,
    /// PEM file of the client certificate chain (mTLS), with `client_key`.
    #[serde(default)]
    pub client_cert: Option<String>,
    /// PEM file of the client certificate's private key, with `client_cert`.
    #[serde(default)]
    pub client_key: Option<String>,
    /// Accept any server certificate. Never for production: the run
    /// prints a warning and the report keeps it.
    #[serde(default)]
    pub insecure_skip_verify: bool,
}

/// How the user names each setting where the options came from (YAML keys
/// or command-line flags), for messages.
#[derive(Debug, Clone)]
pub struct TlsKeys {
    /// The CA file's key, e.g. `target.tls.ca_file` or `--ca-file`.
    pub ca_file: String,
    /// The client certificate's key.
    pub client_cert: String,
    /// The client key's key.
    pub client_key: String,
    /// The switch that skips verification, as the user would write it on.
    pub insecure: String,
}

impl TlsKeys {
    /// The keys under a YAML `tls:` at `at` (e.g. `target.tls`).
    pub fn yaml(at: &str) -> TlsKeys {
        TlsKeys {
            ca_file: format!("{at}.ca_file"),
            client_cert: format!("{at}.client_cert"),
            client_key: format!("{at}.client_key"),
            insecure: format!("{at}.insecure_skip_verify: true"),
        }
    }

    /// The flags of `firedrill defend`.
    pub fn flags() -> TlsKeys {
        TlsKeys {
            ca_file: "--ca-file".to_string(),
            client_cert: "--client-cert".to_string(),
            client_key: "--client-key".to_string(),
            insecure: "--insecure-skip-verify".to_string(),
        }
    }
}

/// A TLS setting that cannot be used: the key at fault and why.
#[derive(Debug, thiserror::Error)]
#[error("{key}: {message}")]
pub struct TlsError {
    /// The setting at fault: `ca_file`, `client_cert` or `client_key`.
    pub field: &'static str,
    /// The key or flag at fault, as the user names it.
    pub key: String,
    /// What is wrong, with the file's name.
    pub message: String,
}

/// A ready TLS client for one service.
#[derive(Clone)]
pub struct TlsClient {
    /// The rustls configuration (roots, client certificate).
    pub(crate) config: Arc<ClientConfig>,
    /// How the settings are named, for handshake errors.
    keys: Arc<TlsKeys>,
    /// Verification is off (`insecure_skip_verify`).
    insecure: bool,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("insecure", &self.insecure)
            .finish_non_exhaustive()
    }
}

/// The line printed at start and kept in the report when `key` turned
/// verification off for `url`.
pub fn insecure_warning(key: &str, url: &str) -> String {
    format!("{key}: TLS certificate verification is OFF for {url}: any server is trusted")
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsClient {
    /// Reads the files `options` names (relative to `base`) into a client;
    /// an unreadable or invalid file is an error at its key.
    pub fn load(options: &TlsOptions, base: &Path, keys: TlsKeys) -> Result<TlsClient, TlsError> {
        let fail = |field: &'static str, message: String| TlsError {
            field,
            key: match field {
                "client_cert" => keys.client_cert.clone(),
                "client_key" => keys.client_key.clone(),
                _ => keys.ca_file.clone(),
            },
            message,
        };
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| fail("ca_file", e.to_string()))?;
        let builder = if options.insecure_skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(SkipVerify(
                    provider.signature_verification_algorithms,
                )))
        } else {
            let mut roots = RootCertStore::empty();
            match &options.ca_file {
                Some(file) => {
                    for cert in read_certs(&base.join(file)).map_err(|m| fail("ca_file", m))? {
                        roots.add(cert).map_err(|e| {
                            fail("ca_file", format!("{file}: not a CA certificate: {e}"))
                        })?;
                    }
                }
                None => {
                    let native = rustls_native_certs::load_native_certs();
                    roots.add_parsable_certificates(native.certs);
                }
            }
            builder.with_root_certificates(roots)
        };
        let config = match (&options.client_cert, &options.client_key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain = read_certs(&base.join(cert)).map_err(|m| fail("client_cert", m))?;
                let path = base.join(key);
                let private = PrivateKeyDer::from_pem_file(&path).map_err(|e| {
                    fail(
                        "client_key",
                        format!("{}: no private key: {e}", path.display()),
                    )
                })?;
                builder
                    .with_client_auth_cert(chain, private)
                    .map_err(|e| fail("client_key", format!("{key}: {e}")))?
            }
            (Some(_), None) => {
                return Err(fail("client_key", "give it with client_cert".to_string()));
            }
            (None, Some(_)) => {
                return Err(fail("client_cert", "give it with client_key".to_string()));
            }
        };
        // HTTP/2 or HTTP/1.1, as the server prefers (ALPN): a connection is
        // then spoken to in the protocol it settled on.
        let mut config = config;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(TlsClient {
            config: Arc::new(config),
            keys: Arc::new(keys),
            insecure: options.insecure_skip_verify,
        })
    }

    /// Whether verification is off.
    pub fn insecure(&self) -> bool {
        self.insecure
    }

    /// Says what a failed handshake with `host` means and what to give.
    pub(crate) fn explain(&self, host: &str, err: io::Error) -> io::Error {
        let keys = &self.keys;
        let Some(tls) = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<rustls::Error>())
        else {
            return err;
        };
        let message = match tls {
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => format!(
                "TLS: certificate for {host} not trusted (UnknownIssuer): give {} with the CA that signed it, or {}",
                keys.ca_file, keys.insecure
            ),
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => format!(
                "TLS: the server's certificate is not valid for {host} (NotValidForName): call it by a name the certificate holds"
            ),
            rustls::Error::InvalidCertificate(other) => {
                format!("TLS: certificate for {host} rejected ({other:?})")
            }
            rustls::Error::AlertReceived(alert) => format!(
                "TLS: {host} refused the handshake ({alert:?}): if it requires a client certificate, give {} and {}",
                keys.client_cert, keys.client_key
            ),
            other => format!("TLS: handshake with {host} failed: {other}"),
        };
        io::Error::new(err.kind(), message)
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read {shown}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{shown}: not PEM certificates: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{shown}: holds no PEM certificate"));
    }
    Ok(certs)
}

/// Trusts every certificate (`insecure_skip_verify`), still checking the
/// handshake's signatures so the connection is the one the certificate
/// names.
#[derive(Debug)]
struct SkipVerify(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(options: TlsOptions, dir: &Path) -> Result<TlsClient, TlsError> {
        TlsClient::load(&options, dir, TlsKeys::yaml("target.tls"))
    }

    #[test]
    fn a_ca_file_without_a_certificate_is_an_error_at_ca_file_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), "not a certificate\n").unwrap();
        let options = TlsOptions {
            ca_file: Some("ca.pem".to_string()),
            ..TlsOptions::default()
        };
        let err = load(options, dir.path()).unwrap_err();
        assert_eq!(
            (err.field, err.key.as_str()),
            ("ca_file", "target.tls.ca_file")
        );
        assert!(
            err.message.contains("ca.pem: holds no PEM certificate"),
            "{err}"
        );
    }

    #[test]
    fn a_client_certificate_without_its_key_is_an_error_at_client_key() {
        let options = TlsOptions {
            client_cert: Some("c.pem".to_string()),
            ..TlsOptions::default()
        };
        let err = load(options, Path::new("")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "target.tls.client_key: give it with client_cert"
        );
    }

    #[test]
    fn insecure_skip_verify_needs_no_file_and_says_so() {
        let options = TlsOptions {
            insecure_skip_verify: true,
            ..TlsOptions::default()
        };
        assert!(load(options, Path::new("")).unwrap().insecure());
    }

    #[test]
    fn an_unknown_issuer_is_explained_with_the_keys_to_give() {
        let client = load(TlsOptions::default(), Path::new("")).unwrap();
        let cause = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let err = client.explain(
            "127.0.0.1",
            io::Error::new(io::ErrorKind::InvalidData, cause),
        );
        assert_eq!(
            err.to_string(),
            "TLS: certificate for 127.0.0.1 not trusted (UnknownIssuer): give target.tls.ca_file with the CA that signed it, or target.tls.insecure_skip_verify: true"
        );
    }
}
