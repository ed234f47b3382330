//! The named proxies of a server and every operation the API offers on
//! them, in Toxiproxy's semantics. Ordered by name (a `BTreeMap`), so
//! listings are stable.
//!
//! The lock is held for quick work only: addresses are resolved before it
//! is taken, and a stopped proxy is waited for after it is released (a
//! restart, which needs the port back, waits under it for at most
//! [`super::proxy::STOP_GRACE`]).

use std::collections::BTreeMap;

use tokio::sync::Mutex;

use super::error::ApiError;
use super::proxy::{
    Addrs, ManagedProxy, ProxyInput, ProxyUpdate, ProxyView, Stopping, parse_mode, resolve_field,
};
use super::toxic::{Toxic, ToxicInput, ToxicUpdate};
use crate::clock::{self, Duration, Instant};
use crate::proxy::{ProxyMetrics, ProxyMode};

/// All proxies of one server.
#[derive(Debug)]
pub struct Registry {
    /// By name. Async lock: starting and stopping a listener awaits.
    proxies: Mutex<BTreeMap<String, ManagedProxy>>,
    /// Seed of every proxy's fault plan (toxicity rolls, jitter).
    seed: u64,
    /// How many request records each HTTP proxy keeps for a drill to read
    /// (`firedrill server --records-kept`).
    records_kept: std::sync::atomic::AtomicUsize,
    /// Woken when a lease is taken or renewed: the reaper looks again at
    /// when the next one runs out.
    leases_changed: tokio::sync::Notify,
}

/// A checked create request.
struct NewProxy {
    /// Name.
    name: String,
    /// Listen address.
    listen: String,
    /// Upstream.
    upstream: String,
    /// Start listening at once.
    enabled: bool,
    /// Protocol.
    mode: ProxyMode,
}

fn check(input: ProxyInput) -> Result<NewProxy, ApiError> {
    let name = input
        .name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::missing("name"))?;
    let upstream = input
        .upstream
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ApiError::missing("upstream"))?;
    Ok(NewProxy {
        name,
        listen: input
            .listen
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| "127.0.0.1:0".to_string()),
        upstream,
        enabled: input.enabled.unwrap_or(true),
        mode: parse_mode(input.mode.as_deref())?,
    })
}

impl Registry {
    /// No proxies yet.
    pub fn new(seed: u64) -> Registry {
        Registry {
            proxies: Mutex::new(BTreeMap::new()),
            seed,
            records_kept: std::sync::atomic::AtomicUsize::new(super::journal::KEPT),
            leases_changed: tokio::sync::Notify::new(),
        }
    }

    /// Each HTTP proxy created from now on keeps its newest `kept` request
    /// records (at least one) for a drill to read.
    pub fn keep_records(&self, kept: usize) {
        self.records_kept
            .store(kept.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    async fn start_new(&self, p: NewProxy, addrs: Addrs) -> Result<ManagedProxy, ApiError> {
        let kept = self.records_kept.load(std::sync::atomic::Ordering::Relaxed);
        let mut proxy =
            ManagedProxy::new(p.name, p.listen, p.upstream, addrs, p.mode, self.seed, kept);
        if p.enabled {
            proxy.start().await?;
        }
        Ok(proxy)
    }

    /// Adds a proxy as it is (tests).
    #[cfg(test)]
    pub async fn insert(&self, proxy: ManagedProxy) {
        self.proxies.lock().await.insert(proxy.name.clone(), proxy);
    }

    /// Every proxy by name.
    pub async fn list(&self) -> BTreeMap<String, ProxyView> {
        let proxies = self.proxies.lock().await;
        proxies.iter().map(|(k, p)| (k.clone(), p.view())).collect()
    }

    /// Creates a proxy: 400 without name or upstream or with an address
    /// that is not one, 409 if the name is taken, 500 if it cannot listen.
    pub async fn create(&self, input: ProxyInput) -> Result<ProxyView, ApiError> {
        let new = check(input)?;
        let addrs = Addrs::resolve(&new.listen, &new.upstream).await?;
        let mut proxies = self.proxies.lock().await;
        if proxies.contains_key(&new.name) {
            return Err(ApiError::proxy_exists());
        }
        let proxy = self.start_new(new, addrs).await?;
        let view = proxy.view();
        proxies.insert(proxy.name.clone(), proxy);
        Ok(view)
    }

    /// Creates or replaces many proxies; returns the proxies created or
    /// kept, and the error that stopped it. Every entry is checked before
    /// any is touched (Toxiproxy creates the ones before a bad entry); an
    /// existing proxy is replaced only when its listen or upstream differ;
    /// a proxy that cannot start stops it with the earlier ones in place,
    /// as in Toxiproxy.
    pub async fn populate(
        &self,
        inputs: Vec<ProxyInput>,
    ) -> (Vec<ProxyView>, Result<(), ApiError>) {
        let mut checked = Vec::new();
        for (i, input) in inputs.into_iter().enumerate() {
            let at =
                |e: ApiError| ApiError::new(e.status, format!("{} at proxy {}", e.message, i + 1));
            let entry = match check(input) {
                Ok(new) => Addrs::resolve(&new.listen, &new.upstream)
                    .await
                    .map(|addrs| (new, addrs)),
                Err(e) => Err(e),
            };
            match entry {
                Ok(entry) => checked.push(entry),
                Err(e) => return (Vec::new(), Err(at(e))),
            }
        }
        let mut proxies = self.proxies.lock().await;
        let mut views = Vec::new();
        for (new, addrs) in checked {
            if let Some(existing) = proxies.get_mut(&new.name) {
                if existing.listen == new.listen && existing.upstream == new.upstream {
                    views.push(existing.view());
                    continue;
                }
                existing.stop().await;
                proxies.remove(&new.name);
            }
            match self.start_new(new, addrs).await {
                Ok(proxy) => {
                    views.push(proxy.view());
                    proxies.insert(proxy.name.clone(), proxy);
                }
                Err(e) => return (views, Err(e)),
            }
        }
        (views, Ok(()))
    }

    /// Whether a proxy named `name` exists (404 when not), without making
    /// its view (which copies every toxic).
    pub async fn exists(&self, name: &str) -> Result<(), ApiError> {
        let proxies = self.proxies.lock().await;
        match proxies.contains_key(name) {
            true => Ok(()),
            false => Err(ApiError::proxy_not_found()),
        }
    }

    /// One proxy.
    pub async fn get(&self, name: &str) -> Result<ProxyView, ApiError> {
        let proxies = self.proxies.lock().await;
        proxies
            .get(name)
            .map(ManagedProxy::view)
            .ok_or_else(ApiError::proxy_not_found)
    }

    /// Changes listen, upstream or enabled; a new address restarts it. As
    /// Toxiproxy (`Proxy.Differs`), the new addresses are resolved before
    /// anything changes, and a listen that resolves to the current one is
    /// no change; one that does not resolve is refused (400) with the
    /// proxy as it was.
    pub async fn update(&self, name: &str, update: ProxyUpdate) -> Result<ProxyView, ApiError> {
        let given_listen = update.listen.filter(|l| !l.is_empty());
        let given_upstream = update.upstream.filter(|u| !u.is_empty());
        let (mut listen, mut upstream, mut addrs) = {
            let proxies = self.proxies.lock().await;
            let proxy = proxies.get(name).ok_or_else(ApiError::proxy_not_found)?;
            (proxy.listen.clone(), proxy.upstream.clone(), proxy.addrs())
        };
        // Only what is given is looked up, and before the lock.
        if let Some(given) = given_listen {
            addrs.listen = resolve_field("listen", &given).await?;
            listen = given;
        }
        if let Some(given) = given_upstream {
            addrs.upstream = resolve_field("upstream", &given).await?;
            upstream = given;
        }
        let mut proxies = self.proxies.lock().await;
        let proxy = proxies
            .get_mut(name)
            .ok_or_else(ApiError::proxy_not_found)?;
        let was_enabled = proxy.enabled();
        if addrs != proxy.addrs() || upstream != proxy.upstream {
            proxy.stop().await;
            proxy.readdress(listen, upstream, addrs);
        }
        if update.enabled.unwrap_or(was_enabled) {
            proxy.start().await?;
        } else {
            proxy.stop().await;
        }
        Ok(proxy.view())
    }

    /// Forgets a proxy and stops it, waiting for it with the registry free.
    pub async fn delete(&self, name: &str) -> Result<(), ApiError> {
        let stopping = {
            let mut proxies = self.proxies.lock().await;
            let mut proxy = proxies.remove(name).ok_or_else(ApiError::proxy_not_found)?;
            proxy.halt()
        };
        if let Some(stopping) = stopping {
            stopping.wait().await;
        }
        Ok(())
    }

    /// Enables every proxy and removes every toxic.
    pub async fn reset(&self) -> Result<(), ApiError> {
        let mut proxies = self.proxies.lock().await;
        for proxy in proxies.values_mut() {
            proxy.toxics.clear();
            proxy.lease = Default::default();
            proxy.publish();
            proxy.start().await?;
        }
        Ok(())
    }

    /// Stops every proxy (server shutdown), all at once, waiting for them
    /// with the registry free: done within [`super::proxy::STOP_GRACE`].
    pub async fn stop_all(&self) {
        let stopping: Vec<Stopping> = {
            let mut proxies = self.proxies.lock().await;
            proxies
                .values_mut()
                .filter_map(ManagedProxy::halt)
                .collect()
        };
        let mut waits = tokio::task::JoinSet::new();
        for stop in stopping {
            waits.spawn(stop.wait());
        }
        while waits.join_next().await.is_some() {}
    }

    /// A proxy's toxics.
    pub async fn toxics(&self, name: &str) -> Result<Vec<Toxic>, ApiError> {
        Ok(self.get(name).await?.toxics)
    }

    /// Adds a toxic; it reaches open connections at their next chunk.
    pub async fn add_toxic(&self, name: &str, input: ToxicInput) -> Result<Toxic, ApiError> {
        let mut proxies = self.proxies.lock().await;
        let proxy = proxies
            .get_mut(name)
            .ok_or_else(ApiError::proxy_not_found)?;
        let lease = input.lease_ms.map(Duration::from_millis);
        let toxic = Toxic::create(input, proxy.mode)?;
        if !proxy.add_toxic(toxic.clone()) {
            return Err(ApiError::toxic_exists());
        }
        if let Some(lease) = lease {
            proxy.lease.toxics.insert(toxic.name.clone());
            proxy.lease.until = Some(clock::later(clock::now(), lease));
            self.leases_changed.notify_one();
        }
        Ok(toxic)
    }

    /// Renews the lease of a proxy's leased toxics: they now run out
    /// `lease` from now. Answers their names.
    pub async fn renew_lease(&self, name: &str, lease: Duration) -> Result<Vec<String>, ApiError> {
        let mut proxies = self.proxies.lock().await;
        let proxy = proxies
            .get_mut(name)
            .ok_or_else(ApiError::proxy_not_found)?;
        if !proxy.lease.toxics.is_empty() {
            proxy.lease.until = Some(clock::later(clock::now(), lease));
            self.leases_changed.notify_one();
        }
        Ok(proxy.lease.toxics.iter().cloned().collect())
    }

    /// Removes the leased toxics of every proxy whose lease ran out by
    /// `now`; answers when the next lease runs out.
    pub async fn reap(&self, now: Instant) -> Option<Instant> {
        let mut proxies = self.proxies.lock().await;
        for proxy in proxies.values_mut() {
            if proxy.lease.until.is_some_and(|until| until <= now) {
                let lapsed = std::mem::take(&mut proxy.lease.toxics);
                for toxic in &lapsed {
                    proxy.remove_toxic(toxic);
                }
                proxy.lease.until = None;
                let names: Vec<&str> = lapsed.iter().map(String::as_str).collect();
                tracing::warn!(proxy = %crate::fault::LogName(&proxy.name), toxics = %names.join(", "), "the lease ran out without a renewal: its toxics are removed");
            }
        }
        proxies.values().filter_map(|p| p.lease.until).min()
    }

    /// Removes leased toxics as their leases run out, until dropped: sleeps
    /// until the next one runs out, or a lease is taken or renewed.
    pub async fn reap_leases(&self) {
        loop {
            let next = self.reap(clock::now()).await;
            let changed = self.leases_changed.notified();
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = changed => {}
                        _ = clock::sleep_until(at) => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// A page of a proxy's request records (see [`super::journal`]).
    pub async fn records(
        &self,
        name: &str,
        since: u64,
        limit: usize,
    ) -> Result<super::journal::Page, ApiError> {
        let journal = {
            let proxies = self.proxies.lock().await;
            let proxy = proxies.get(name).ok_or_else(ApiError::proxy_not_found)?;
            proxy.journal.clone()
        };
        Ok(journal.page(name, since, limit))
    }

    /// One toxic.
    pub async fn toxic(&self, name: &str, toxic: &str) -> Result<Toxic, ApiError> {
        let proxies = self.proxies.lock().await;
        let proxy = proxies.get(name).ok_or_else(ApiError::proxy_not_found)?;
        proxy
            .toxics
            .get(toxic)
            .cloned()
            .ok_or_else(ApiError::toxic_not_found)
    }

    /// Merges attributes and toxicity into a toxic.
    pub async fn update_toxic(
        &self,
        name: &str,
        toxic: &str,
        update: ToxicUpdate,
    ) -> Result<Toxic, ApiError> {
        let mut proxies = self.proxies.lock().await;
        let proxy = proxies
            .get_mut(name)
            .ok_or_else(ApiError::proxy_not_found)?;
        let updated = proxy
            .toxics
            .get(toxic)
            .ok_or_else(ApiError::toxic_not_found)?
            .updated(update, proxy.mode)?;
        proxy.toxics.set(updated.clone());
        proxy.publish();
        Ok(updated)
    }

    /// Removes a toxic.
    pub async fn delete_toxic(&self, name: &str, toxic: &str) -> Result<(), ApiError> {
        let mut proxies = self.proxies.lock().await;
        let proxy = proxies
            .get_mut(name)
            .ok_or_else(ApiError::proxy_not_found)?;
        if !proxy.remove_toxic(toxic) {
            return Err(ApiError::toxic_not_found());
        }
        Ok(())
    }

    /// Counters of every proxy, by name, for /metrics.
    pub async fn metrics(&self) -> Vec<ProxyMetrics> {
        let proxies = self.proxies.lock().await;
        proxies
            .values()
            .map(|p| ProxyMetrics {
                name: p.name.clone(),
                listen: p.listen.clone(),
                upstream: p.upstream.clone(),
                telemetry: p.telemetry.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
