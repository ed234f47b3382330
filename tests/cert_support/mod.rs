//! Certificates made by the suite (rcgen) for TLS between the drill and
//! its agents: a CA for the drill's hosts, another CA, an agent's
//! certificate for 127.0.0.1 (and an expired one), the drill's client
//! certificate.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// A test CA, its certificate written to `DIR/NAME-ca.pem`.
pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    pub fn new(dir: &Path, name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.join(format!("{name}-ca.pem")), issuer.pem()).unwrap();
        Authority { issuer }
    }

    /// A certificate for 127.0.0.1 written as `DIR/LABEL.pem` and
    /// `DIR/LABEL-key.pem`; `expired`: valid only in 2000.
    pub fn sign(&self, dir: &Path, label: &str, expired: bool) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2000, 12, 31);
        }
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        std::fs::write(dir.join(format!("{label}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{label}-key.pem")), key.serialize_pem()).unwrap();
    }
}

/// A folder with the drill's CA (`drill-ca.pem`), another CA
/// (`other-ca.pem`), the agent's certificate (`agent`), an expired one
/// (`expired`) and the drill's client certificate (`drill`).
pub fn certificates() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    certificates_in(dir.path());
    dir
}

/// Writes the [`certificates`] into `dir`.
pub fn certificates_in(dir: &Path) {
    let drill = Authority::new(dir, "drill");
    Authority::new(dir, "other");
    drill.sign(dir, "agent", false);
    drill.sign(dir, "expired", true);
    drill.sign(dir, "drill", false);
}
