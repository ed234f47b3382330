//! `dependencies.NAME.agent`: the dependency's fault proxy runs on another
//! host, as `firedrill server` or a real Toxiproxy, and the drill drives it
//! through the Toxiproxy API.
//!
//! ```yaml
//! dependencies:
//!   inventory:
//!     listen: 0.0.0.0:19001              # where the agent's proxy listens (to create it)
//!     upstream: inventory.staging:9000   # what it forwards to (to create it)
//!     agent:
//!       api: http://shop-host:8474       # the agent's API
//!       proxy: inventory                 # its proxy's name there (default: the dependency's)
//!       token: ${FIREDRILL_AGENT_TOKEN}  # firedrill server --api-token
//!       lease: 10s                       # the agent removes the faults if not renewed
//!       kind: firedrill                  # or toxiproxy
//! ```

use serde::Deserialize;

pub use crate::agent::AgentKind;
use crate::clock::Duration;
use crate::schema::units::Dur;

/// An agent, checked.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The key it sits under: `dependencies.NAME.agent`.
    pub at: String,
    /// The API's base URL, without a trailing slash.
    pub api: String,
    /// The proxy's name on the agent.
    pub proxy: String,
    /// `Authorization: Bearer` for every call, if set.
    pub token: Option<String>,
    /// How long a fault outlives the drill's last renewal.
    pub lease: Duration,
    /// firedrill or Toxiproxy.
    pub kind: AgentKind,
    /// Where a proxy the drill creates listens (on the agent's host).
    pub listen: Option<String>,
    /// What a proxy the drill creates forwards to, `host:port`.
    pub upstream: Option<String>,
    /// `tls:` as written, for an `https://` API.
    pub tls: crate::tls::TlsOptions,
    /// The TLS client `tls` makes, read with the experiment file (its
    /// files relative to it); none for `http://`.
    pub client: Option<crate::tls::TlsClient>,
}

/// `agent:` as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    /// The agent's Toxiproxy API: `http://host:port` (or `https://`).
    #[schemars(regex(pattern = r"^https?://[^/?#]+/?$"))]
    api: String,
    /// The proxy's name on the agent (default: the dependency's name):
    /// adopted when it exists, else created on the dependency's `listen`
    /// and `upstream`.
    #[serde(default)]
    proxy: Option<String>,
    /// Sent as `Authorization: Bearer <token>` (`firedrill server
    /// --api-token`); write it as `${VARIABLE}`.
    #[serde(default)]
    token: Option<String>,
    /// A firedrill agent removes the drill's faults itself this long after
    /// the drill's last renewal (default 10s; the drill renews every third
    /// of it).
    #[serde(default)]
    lease: Option<Dur>,
    /// `firedrill` (default) or `toxiproxy`: a real Toxiproxy takes
    /// byte-stream toxics only, keeps no request records and no leases.
    #[serde(default)]
    kind: AgentKind,
    /// For an `https://` API (`firedrill server --tls-cert`): `ca_file`
    /// (the CA that signed the agent's certificate), `client_cert` and
    /// `client_key` (mTLS: `--tls-client-ca` on the agent), relative to
    /// the experiment file.
    #[serde(default)]
    tls: crate::tls::TlsOptions,
}

/// The shortest lease: renewals go every third of it.
const MIN_LEASE: Duration = Duration::from_secs(1);

/// Reads `dependencies.NAME.agent` (`key`), with the dependency's `listen`
/// and `upstream` (to create the proxy).
pub(super) fn read(
    key: &str,
    name: &str,
    raw: RawAgent,
    listen: Option<String>,
    upstream: Option<String>,
) -> Result<Agent, String> {
    let api = raw.api.trim_end_matches('/').to_string();
    let authority = api
        .strip_prefix("http://")
        .or_else(|| api.strip_prefix("https://"));
    if authority.is_none_or(|a| a.is_empty() || a.contains('/')) {
        return Err(format!(
            "{key}.api: `{}`: expected the agent's API as http://host:port",
            raw.api
        ));
    }
    if !api.starts_with("https://") && raw.tls != crate::tls::TlsOptions::default() {
        return Err(format!(
            "{key}.tls: the API `{api}` is plain HTTP; tls applies to an https:// API"
        ));
    }
    let lease = raw.lease.map_or(Duration::from_secs(10), Dur::get);
    if lease < MIN_LEASE {
        return Err(format!(
            "{key}.lease: {}: at least 1s (the drill renews it every third)",
            Dur(lease)
        ));
    }
    let upstream = upstream.map(|u| plain_upstream(key, &u)).transpose()?;
    if listen.is_some() != upstream.is_some() {
        return Err(format!(
            "{}: give both listen and upstream (the agent creates the proxy on them when it has none named `{}`), or neither (the proxy must be there)",
            key.trim_end_matches(".agent"),
            raw.proxy.as_deref().unwrap_or(name)
        ));
    }
    Ok(Agent {
        at: key.to_string(),
        api,
        proxy: raw.proxy.unwrap_or_else(|| name.to_string()),
        token: raw.token.filter(|t| !t.is_empty()),
        lease,
        kind: raw.kind,
        listen,
        upstream,
        tls: raw.tls,
        client: None,
    })
}

/// An agent's proxy forwards bytes to `host:port`: `http://host:port` is
/// taken as that, `https://` is refused (the agent speaks no TLS
/// upstream).
fn plain_upstream(key: &str, upstream: &str) -> Result<String, String> {
    let dependency = key.trim_end_matches(".agent");
    if upstream.starts_with("https://") {
        return Err(format!(
            "{dependency}.upstream: `{upstream}`: an agent's proxy forwards plain TCP or HTTP; give host:port"
        ));
    }
    let bare = upstream.strip_prefix("http://").unwrap_or(upstream);
    let bare = bare.trim_end_matches('/');
    if bare.contains('/') {
        return Err(format!(
            "{dependency}.upstream: `{upstream}`: an agent's proxy takes no path prefix; give host:port"
        ));
    }
    Ok(bare.to_string())
}
