//! Setting up the agent's proxy before a drill: its version checked, an
//! existing proxy adopted, or one created.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{State, refused};
use crate::agent::{AgentClient, AgentKind, Answer};
use crate::experiment::config::agent::Agent;
use crate::experiment::error::RunError;

/// `/proxies/NAME`, the name escaped.
pub(super) fn proxy_path(proxy: &str) -> String {
    format!("/proxies/{}", crate::http::escape_unreserved(proxy))
}

/// Refuses an agent that is not what the file says: a firedrill agent
/// answers `/version` with a `firedrill` field, a Toxiproxy without.
pub(super) fn check_version(agent: &Agent, version: &Answer) -> Result<(), RunError> {
    if version.status == StatusCode::UNAUTHORIZED {
        return Err(refused(
            agent,
            ".token",
            "the agent refused the token (401): give its --api-token".to_string(),
        ));
    }
    if !version.status.is_success() {
        return Err(refused(
            agent,
            ".api",
            format!("GET /version: {}: {}", version.status, version.error_text()),
        ));
    }
    let body: Value = version.json().map_err(|e| {
        refused(
            agent,
            ".api",
            format!("GET /version: {e}: not a Toxiproxy API"),
        )
    })?;
    let firedrill = body.get("firedrill").is_some();
    if agent.kind == AgentKind::Firedrill && !firedrill {
        return Err(refused(
            agent,
            ".kind",
            format!(
                "answers as Toxiproxy {}, not firedrill server: write kind: toxiproxy (no HTTP faults, records or leases), or run firedrill server there",
                body.get("version").and_then(Value::as_str).unwrap_or("?")
            ),
        ));
    }
    Ok(())
}

/// Checks a proxy the agent has: a firedrill agent's must be in HTTP mode
/// (its faults and records act on requests).
pub(super) fn adopt(agent: &Agent, existing: &Answer) -> Result<(), RunError> {
    let view: Value = existing.json().map_err(|e| refused(agent, ".proxy", e.0))?;
    let http = view.get("mode").and_then(Value::as_str) == Some("http");
    if agent.kind == AgentKind::Firedrill && !http {
        return Err(refused(
            agent,
            ".proxy",
            format!(
                "proxy `{}` is in tcp mode: HTTP faults and request records need \"mode\": \"http\" (delete it and let the drill create it, or create it in http mode)",
                agent.proxy
            ),
        ));
    }
    Ok(())
}

/// Creates the proxy on the file's `listen` and `upstream`.
pub(super) async fn create(
    agent: &Agent,
    client: &AgentClient,
    state: &mut State,
) -> Result<(), RunError> {
    let (Some(listen), Some(upstream)) = (&agent.listen, &agent.upstream) else {
        return Err(refused(
            agent,
            ".proxy",
            format!(
                "the agent has no proxy `{}`, and the dependency gives no listen and upstream to create it on",
                agent.proxy
            ),
        ));
    };
    let mut body =
        json!({ "name": agent.proxy, "listen": listen, "upstream": upstream, "enabled": true });
    if agent.kind == AgentKind::Firedrill {
        body["mode"] = json!("http");
    }
    let answer = client
        .call(Method::POST, "/proxies", Some(&body))
        .await
        .map_err(|e| refused(agent, ".api", e.0))?;
    state.clocks.push(answer.sample);
    if answer.status != StatusCode::CREATED {
        // A listen address the agent cannot bind is its 500.
        let key = match answer.status.is_server_error() {
            true => format!("{}.listen", agent.at.trim_end_matches(".agent")),
            false => format!("{}.proxy", agent.at),
        };
        return Err(RunError::At {
            key,
            message: format!(
                "{}: creating proxy `{}` on {listen} -> {upstream}: {}: {}",
                agent.api,
                agent.proxy,
                answer.status,
                answer.error_text()
            ),
        });
    }
    Ok(())
}
