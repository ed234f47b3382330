//! The registry's operations against Toxiproxy's semantics: an update that
//! would not start is refused before anything changes.

use super::*;
use http::StatusCode;

fn input(json: &str) -> ProxyInput {
    serde_json::from_str(json).unwrap()
}

fn update(json: &str) -> ProxyUpdate {
    serde_json::from_str(json).unwrap()
}

/// PATCHes proxy `a`'s `field` with an address that is not one: a 400
/// naming it.
async fn refused_400(r: &Registry, field: &str) {
    let json = format!(r#"{{"{field}":"127.0.0.1:abc"}}"#);
    let e = r.update("a", update(&json)).await.unwrap_err();
    assert_eq!(e.status, StatusCode::BAD_REQUEST, "{e}");
    assert!(
        e.message.starts_with(&format!("{field} 127.0.0.1:abc: ")),
        "{e}"
    );
}

#[tokio::test]
async fn a_listen_that_is_not_an_address_is_refused_on_a_disabled_proxy_and_reset_still_works() {
    let r = Registry::new(1);
    for name in ["a", "b"] {
        r.create(input(&format!(
            r#"{{"name":"{name}","upstream":"127.0.0.1:9","enabled":false}}"#
        )))
        .await
        .unwrap();
    }
    let before = r.get("a").await.unwrap();
    refused_400(&r, "listen").await;
    let after = r.get("a").await.unwrap();
    assert_eq!((after.listen, after.enabled), (before.listen, false));
    r.reset().await.unwrap();
    assert!(r.get("a").await.unwrap().enabled);
    assert!(
        r.get("b").await.unwrap().enabled,
        "reset reaches later proxies"
    );
    r.stop_all().await;
}

#[tokio::test]
async fn an_enabled_proxy_given_an_upstream_that_is_not_an_address_keeps_running_as_it_was() {
    let r = Registry::new(1);
    let made = r
        .create(input(r#"{"name":"a","upstream":"127.0.0.1:9"}"#))
        .await
        .unwrap();
    refused_400(&r, "upstream").await;
    let after = r.get("a").await.unwrap();
    assert_eq!(
        (after.listen, after.upstream.as_str(), after.enabled),
        (made.listen, "127.0.0.1:9", true)
    );
    r.stop_all().await;
}

#[tokio::test(start_paused = true)]
async fn a_proxy_that_never_stops_neither_holds_the_registry_nor_keeps_delete_or_stop_all_waiting()
{
    let r = std::sync::Arc::new(Registry::new(1));
    r.insert(ManagedProxy::stuck("a")).await;
    r.insert(ManagedProxy::stuck("b")).await;
    let deleting = tokio::spawn({
        let r = r.clone();
        async move { r.delete("a").await }
    });
    tokio::task::yield_now().await;
    let second = crate::clock::Duration::from_secs(1);
    let listed = tokio::time::timeout(second, r.list())
        .await
        .expect("the registry answers while a delete waits for its proxy");
    assert_eq!(listed.keys().collect::<Vec<_>>(), ["b"]);
    let bound = super::super::proxy::STOP_GRACE * 2;
    tokio::time::timeout(bound, deleting)
        .await
        .expect("a delete returns within the grace")
        .unwrap()
        .unwrap();
    tokio::time::timeout(bound, r.stop_all())
        .await
        .expect("stop_all returns within the grace");
}

/// The fault list proxy `name` publishes now.
async fn published(r: &Registry, name: &str) -> std::sync::Arc<crate::fault::Snapshot> {
    r.proxies.lock().await[name].plan.snapshot()
}

/// An add publishes the list one toxic longer by sharing the faults
/// already published, not by copying every one of them (which made each
/// add cost as much as the proxy's toxics): the first toxic's fault is the
/// same object before and after a second toxic is added.
#[tokio::test]
async fn adding_a_toxic_shares_the_faults_already_published_instead_of_copying_them() {
    let r = Registry::new(1);
    r.create(input(
        r#"{"name":"a","upstream":"127.0.0.1:9","enabled":false}"#,
    ))
    .await
    .unwrap();
    r.add_toxic("a", toxic(r#"{"name":"first","type":"latency"}"#))
        .await
        .unwrap();
    let before = published(&r, "a").await;
    r.add_toxic("a", toxic(r#"{"name":"second","type":"latency"}"#))
        .await
        .unwrap();
    let after = published(&r, "a").await;
    let names: Vec<&str> = after.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    assert!(
        std::ptr::eq(before.get(0).unwrap(), after.get(0).unwrap()),
        "the first toxic's fault was copied"
    );
}

fn toxic(json: &str) -> ToxicInput {
    serde_json::from_str(json).unwrap()
}

/// A stopped HTTP-mode proxy `a`.
async fn stopped_http_proxy(r: &Registry) {
    r.create(input(
        r#"{"name":"a","upstream":"127.0.0.1:9","enabled":false,"mode":"http"}"#,
    ))
    .await
    .unwrap();
}

async fn toxic_names(r: &Registry, proxy: &str) -> Vec<String> {
    r.toxics(proxy)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_leased_toxic_is_removed_when_its_lease_runs_out_and_an_unleased_one_stays() {
    let r = std::sync::Arc::new(Registry::new(1));
    stopped_http_proxy(&r).await;
    r.add_toxic("a", toxic(r#"{"name":"kept","type":"noop"}"#))
        .await
        .unwrap();
    r.add_toxic(
        "a",
        toxic(r#"{"name":"leased","type":"http_status","lease_ms":3000}"#),
    )
    .await
    .unwrap();
    let reaper = tokio::spawn({
        let r = r.clone();
        async move { r.reap_leases().await }
    });
    tokio::time::sleep(Duration::from_millis(2_999)).await;
    assert_eq!(toxic_names(&r, "a").await, ["kept", "leased"]);
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(toxic_names(&r, "a").await, ["kept"], "removed at 3 s");
    reaper.abort();
}

#[tokio::test(start_paused = true)]
async fn renewing_a_lease_moves_its_end_from_the_renewal_and_a_renewal_that_stops_lets_it_run_out()
{
    let r = std::sync::Arc::new(Registry::new(1));
    stopped_http_proxy(&r).await;
    r.add_toxic(
        "a",
        toxic(r#"{"name":"x","type":"http_status","lease_ms":1000}"#),
    )
    .await
    .unwrap();
    let reaper = tokio::spawn({
        let r = r.clone();
        async move { r.reap_leases().await }
    });
    // Renewed every 600 ms for 3 s: still there at 3.5 s.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(600)).await;
        let held = r.renew_lease("a", Duration::from_millis(1000)).await;
        assert_eq!(held.unwrap(), ["x"]);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(toxic_names(&r, "a").await, ["x"]);
    // The last renewal was at 3 s: gone by 4 s.
    tokio::time::sleep(Duration::from_millis(501)).await;
    assert!(toxic_names(&r, "a").await.is_empty());
    assert!(
        r.renew_lease("a", Duration::from_secs(1))
            .await
            .unwrap()
            .is_empty()
    );
    let e = r
        .renew_lease("nope", Duration::from_secs(1))
        .await
        .unwrap_err();
    assert_eq!(e.status, StatusCode::NOT_FOUND);
    reaper.abort();
}

#[tokio::test(start_paused = true)]
async fn a_leased_toxic_deleted_by_hand_ends_its_lease_and_a_reap_finds_nothing_to_do() {
    let r = Registry::new(1);
    stopped_http_proxy(&r).await;
    r.add_toxic(
        "a",
        toxic(r#"{"name":"x","type":"http_status","lease_ms":1000}"#),
    )
    .await
    .unwrap();
    assert!(r.reap(clock::now()).await.is_some(), "a lease is pending");
    r.delete_toxic("a", "x").await.unwrap();
    assert_eq!(r.reap(clock::now()).await, None);
    r.add_toxic(
        "a",
        toxic(r#"{"name":"y","type":"http_status","lease_ms":1000}"#),
    )
    .await
    .unwrap();
    r.reset().await.unwrap();
    assert_eq!(r.reap(clock::now()).await, None, "reset ends every lease");
    r.stop_all().await;
}
