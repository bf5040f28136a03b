//! TLS for the HTTP client: rustls with aws-lc-rs (reqwest's own choice),
//! no OpenSSL. Whom the client trusts (the platform's roots, webpki's, or
//! only the ones added), and the certificate it shows when the server asks
//! for one. What a refused certificate becomes is `failure`'s.

use std::fmt;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::envelope::ErrorEnvelope;
use crate::mcp::client::failure::misconfigured;

/// The certificate authorities an HTTPS client trusts, besides those added
/// with [`Connect::root_certificate_pem`](crate::mcp::client::Connect::root_certificate_pem).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Roots {
    /// The operating system's trust store (through
    /// `rustls-platform-verifier`): what a browser on the machine trusts.
    #[default]
    Platform,
    /// Mozilla's roots, compiled in (`webpki-roots`): the same on every
    /// machine, whatever its trust store holds.
    Webpki,
    /// None but the added ones: for a private CA, and nothing else.
    AddedOnly,
}

/// The TLS settings of a client: its roots, the CAs added, its own
/// certificate. The private key is never printed.
#[derive(Clone, Default)]
pub(crate) struct TlsSettings {
    pub(crate) roots: Roots,
    /// PEM texts of CA certificates to trust too.
    pub(crate) added: Vec<Arc<[u8]>>,
    /// The client's certificate chain and private key, both PEM.
    pub(crate) identity: Option<Identity>,
}

/// A client certificate chain and its private key, both PEM.
pub(crate) type Identity = (Arc<[u8]>, Arc<[u8]>);

impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("roots", &self.roots)
            .field("added", &self.added.len())
            .field("identity", &self.identity.is_some())
            .finish()
    }
}

impl TlsSettings {
    /// The rustls configuration these settings make.
    ///
    /// # Errors
    ///
    /// An `other` envelope, reason `CLIENT_MISCONFIGURED`, naming what
    /// could not be read: a PEM text without a certificate, a key that is
    /// not one, a trust store that could not be loaded.
    pub(crate) fn config(&self) -> Result<rustls::ClientConfig, ErrorEnvelope> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut added = Vec::new();
        for pem in &self.added {
            let certificates = certificates(pem, "a root certificate")?;
            added.extend(certificates);
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|error| {
                misconfigured(format!("rustls refused its protocol versions: {error}"))
            })?;
        let builder = match self.roots {
            Roots::Platform => {
                let verifier =
                    rustls_platform_verifier::Verifier::new_with_extra_roots(added, provider)
                        .map_err(|error| {
                            misconfigured(format!(
                                "the platform's trust store could not be loaded: {error}"
                            ))
                        })?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(verifier))
            }
            Roots::Webpki | Roots::AddedOnly => {
                let mut store = rustls::RootCertStore::empty();
                if self.roots == Roots::Webpki {
                    store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
                }
                for certificate in added {
                    store.add(certificate).map_err(|error| {
                        misconfigured(format!("a root certificate cannot be trusted: {error}"))
                    })?;
                }
                if store.is_empty() {
                    return Err(misconfigured(
                        "no root certificate to trust: `Roots::AddedOnly` needs one added".into(),
                    ));
                }
                builder.with_root_certificates(store)
            }
        };
        let mut config = match &self.identity {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => {
                let chain = certificates(chain, "the client certificate")?;
                let key = PrivateKeyDer::from_pem_slice(key).map_err(|_| {
                    misconfigured("the client's private key is not a PEM private key".into())
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|error| {
                    misconfigured(format!("the client certificate cannot be used: {error}"))
                })?
            }
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// The certificates of a PEM text: at least one.
fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, ErrorEnvelope> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| misconfigured(format!("{what} is not readable PEM: {error}")))?;
    if certificates.is_empty() {
        return Err(misconfigured(format!(
            "{what} holds no `BEGIN CERTIFICATE` block"
        )));
    }
    Ok(certificates)
}
