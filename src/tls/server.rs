//! TLS on `firedrill server`'s API listener: its certificate and key, and
//! optionally the CA that every client's certificate must be signed by
//! (mTLS: only the drill's hosts may call). The files are read at start;
//! new certificates take a restart.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use super::{provider, read_certs};

/// The server's TLS from `cert` (PEM chain), `key` (PEM private key) and,
/// for mTLS, `client_ca` (PEM CA certificates); an error names the file
/// and what is wrong with it.
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerConfig>, String> {
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(file) => {
            let mut roots = RootCertStore::empty();
            for ca in read_certs(file)? {
                roots.add(ca).map_err(|e| {
                    format!(
                        "--tls-client-ca {}: not a CA certificate: {e}",
                        file.display()
                    )
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("--tls-client-ca {}: {e}", file.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let chain = read_certs(cert).map_err(|e| format!("--tls-cert: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: no PEM private key: {e}", key.display()))?;
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert {} with --tls-key: {e}", cert.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
