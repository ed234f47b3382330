//! An executor local to one client connection: what hyper would spawn as
//! tasks of their own for that connection (each HTTP/2 stream's service,
//! an HTTP/2 upstream connection and its request bodies) runs instead
//! inside the connection's own task, beside the connection. A request
//! towards an HTTP/2 upstream then crosses no task from the client's
//! bytes to the upstream's and back.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::task::AtomicWaker;

/// A future run by a [`Local`].
type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Spawns futures into the task that runs [`Local::run`]. A future spawned
/// after that task ended, or left when it ends, is dropped with it.
#[derive(Clone, Default)]
pub struct Local {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Whether `queue` may hold a job: a connection that never spawns
    /// (HTTP/1.1) never takes the lock.
    queued: AtomicBool,
    /// Spawned, not yet taken by the runner.
    queue: Mutex<Vec<Job>>,
    /// The runner's task, woken by a spawn.
    runner: AtomicWaker,
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local").finish_non_exhaustive()
    }
}

impl Local {
    /// A new executor; its futures run while [`Local::run`] is polled.
    pub fn new() -> Local {
        Local::default()
    }

    /// Spawns `job` into the runner's task.
    pub fn spawn(&self, job: impl Future<Output = ()> + Send + 'static) {
        self.inner
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::pin(job));
        self.inner.queued.store(true, Ordering::Release);
        self.inner.runner.wake();
    }

    /// Runs every spawned future; never ends (it is raced against the
    /// connection it serves, and dropped with it).
    pub async fn run(&self) {
        let mut jobs = FuturesUnordered::new();
        std::future::poll_fn(|cx| {
            self.inner.runner.register(cx.waker());
            loop {
                if self.inner.queued.swap(false, Ordering::Acquire) {
                    let mut queue = self.inner.queue.lock().unwrap_or_else(|e| e.into_inner());
                    jobs.extend(queue.drain(..));
                }
                if jobs.is_empty() {
                    break;
                }
                // Ends when every job is pending, or when the set yields
                // to let the rest of the task run (its budget).
                while let Poll::Ready(Some(())) = jobs.poll_next_unpin(cx) {}
                // A job spawned meanwhile runs in this same turn.
                if !self.inner.queued.load(Ordering::Acquire) {
                    break;
                }
            }
            Poll::<()>::Pending
        })
        .await
    }
}

impl<F> hyper::rt::Executor<F> for Local
where
    F: Future + Send + 'static,
{
    fn execute(&self, fut: F) {
        self.spawn(async move {
            fut.await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `wait`'s output, or a failure after 5 s of (paused) time: an
    /// executor that never runs a job fails its test instead of hanging it.
    async fn within<T>(wait: impl Future<Output = T>) -> T {
        tokio::time::timeout(crate::clock::Duration::from_secs(5), wait)
            .await
            .expect("done within 5 s")
    }

    #[tokio::test(start_paused = true)]
    async fn a_spawned_future_runs_in_the_runners_task_and_wakes_it_when_ready() {
        let local = Local::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<u32>();
        local.spawn(async move {
            let v = rx.await.expect("sent");
            done_tx.send(v + 1).expect("listening");
        });
        let runner = local.clone();
        let outcome = tokio::select! {
            () = runner.run() => unreachable!("run never ends"),
            v = within(async {
                tokio::task::yield_now().await;
                tx.send(41).expect("job listening");
                done_rx.await.expect("job answers")
            }) => v,
        };
        assert_eq!(outcome, 42);
    }

    #[tokio::test(start_paused = true)]
    async fn a_future_spawned_from_inside_a_job_runs_too() {
        let local = Local::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<&str>();
        let inner = local.clone();
        local.spawn(async move {
            inner.spawn(async move {
                tx.send("nested").expect("listening");
            });
        });
        let got = tokio::select! {
            () = local.run() => unreachable!("run never ends"),
            v = within(rx) => v.expect("nested job ran"),
        };
        assert_eq!(got, "nested");
    }

    /// Tasks alive on the runtime while `streams` HTTP/2 requests are held
    /// in flight by a server on `serve_http`, over one connection.
    async fn tasks_with_streams_held(streams: usize) -> usize {
        use crate::http::{ClientFin, ShutdownSignal, full};
        let (client, server) = tokio::io::duplex(1 << 16);
        let (release, released) = tokio::sync::watch::channel(false);
        let arrived = Arc::new(tokio::sync::Semaphore::new(0));
        let seen = arrived.clone();
        let service = hyper::service::service_fn(move |_req| {
            let mut released = released.clone();
            seen.add_permits(1);
            async move {
                let _ = released.wait_for(|r| *r).await;
                Ok::<_, std::convert::Infallible>(http::Response::new(full("ok")))
            }
        });
        let (_stop, shutdown) = ShutdownSignal::new();
        let fin = ClientFin::HangUp.on(&server);
        let served = tokio::spawn(crate::http::serve_http(
            Local::new(),
            server,
            service,
            fin,
            shutdown,
        ));
        // The client's side in one task of its own, whatever it spawns.
        let client_side = Local::new();
        let runner = client_side.clone();
        let driver = tokio::spawn(async move { runner.run().await });
        let (sender, connection) = hyper::client::conn::http2::handshake(
            client_side.clone(),
            hyper_util::rt::TokioIo::new(client),
        )
        .await
        .expect("h2 handshake");
        client_side.spawn(async move {
            let _ = connection.await;
        });
        let calls: Vec<_> = (0..streams)
            .map(|_| {
                let mut sender = sender.clone();
                let req = http::Request::get("http://local/").body(full("")).unwrap();
                async move { sender.send_request(req).await.expect("answered").status() }
            })
            .collect();
        let calls = futures_util::future::join_all(calls);
        tokio::pin!(calls);
        let alive = tokio::select! {
            _ = calls.as_mut() => unreachable!("held until released"),
            permits = within(arrived.acquire_many(u32::try_from(streams).unwrap())) => {
                permits.expect("open").forget();
                tokio::runtime::Handle::current().metrics().num_alive_tasks()
            }
        };
        release.send(true).unwrap();
        assert!(
            within(calls)
                .await
                .iter()
                .all(|s| *s == http::StatusCode::OK)
        );
        drop(sender);
        served.abort();
        driver.abort();
        alive
    }

    #[tokio::test(start_paused = true)]
    async fn an_http2_connections_streams_in_flight_add_no_task_of_their_own() {
        let one = tasks_with_streams_held(1).await;
        let many = tasks_with_streams_held(16).await;
        // hyper's own executor would spawn a task per stream: 15 more.
        assert_eq!(
            many, one,
            "tasks alive: {one} with 1 stream held, {many} with 16"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn jobs_left_when_the_runner_is_dropped_are_dropped() {
        let local = Local::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        local.spawn(async move {
            std::future::pending::<()>().await;
            drop(tx);
        });
        let ran = tokio::time::timeout(crate::clock::Duration::from_millis(10), local.run()).await;
        assert!(ran.is_err(), "run never ends by itself");
        drop(local);
        assert!(
            within(rx).await.is_err(),
            "the job and its sender were dropped"
        );
    }
}
