//! A thread per core, each a current-thread event loop with its own
//! listener: the shape haproxy (`nbthread`) and nginx (`worker_processes`)
//! use. Nothing moves between loops: a connection is accepted, served and
//! its upstream connection driven on the loop whose listener the kernel
//! gave it to (`SO_REUSEPORT`), with no work stealing and no cross-thread
//! wake on the request path. State the loops share (the fault plan, the
//! counters, a defense line's breakers) is behind `Arc`, as before.

use std::future::Future;
use std::io;
use std::sync::Arc;

/// How many event loops to run: one per core this process may use
/// (`taskset -c 0` gives one).
pub fn per_core() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// A runtime for one event loop: current-thread, with I/O and time.
pub fn event_loop() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// A listener and the event loop that serves it: `None`, the caller's;
/// else a runtime of its own, run on a thread of its own by
/// [`serve_each`].
#[derive(Debug)]
pub struct Loop<A> {
    /// What the loop accepts on.
    listener: A,
    /// Its runtime, made when the loop was prepared.
    runtime: Option<tokio::runtime::Runtime>,
}

impl<A> Loop<A> {
    /// `listener` served on the caller's event loop.
    pub fn caller(listener: A) -> Loop<A> {
        Loop {
            listener,
            runtime: None,
        }
    }

    /// `listener` served on an event loop of its own, whose runtime is made
    /// now ([`event_loop`]): a loop that cannot be made fails before
    /// anything is served, and its file descriptors exist from here on.
    pub fn own(listener: A) -> io::Result<Loop<A>> {
        Ok(Loop {
            listener,
            runtime: Some(event_loop()?),
        })
    }
}

/// Each of `listeners` with its event loop: the first is the caller's,
/// every other has one of its own ([`Loop::own`]).
pub fn prepare<A>(listeners: Vec<A>) -> io::Result<Vec<Loop<A>>> {
    let mut listeners = listeners.into_iter();
    let first = listeners.next().map(Loop::caller);
    first
        .into_iter()
        .map(Ok)
        .chain(listeners.map(Loop::own))
        .collect()
}

/// Runs `serve` on every loop: the caller's on the calling task, every
/// other on a thread of its own. Resolves once all have ended, with the
/// first error any of them had (a loop that panicked is an error too).
pub async fn serve_each<A, F, Fut>(loops: Vec<Loop<A>>, serve: F) -> io::Result<()>
where
    A: Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = io::Result<()>> + 'static,
{
    let serve = Arc::new(serve);
    let mut here = Vec::new();
    let mut others = Vec::new();
    for (i, Loop { listener, runtime }) in loops.into_iter().enumerate() {
        let Some(runtime) = runtime else {
            here.push(listener);
            continue;
        };
        let serve = serve.clone();
        let (done, ended) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(format!("firedrill-loop-{i}"))
            .spawn(move || {
                let _ = done.send(runtime.block_on(serve(listener)));
            })?;
        others.push(ended);
    }
    let mut result = Ok(());
    for listener in here {
        let served = serve(listener).await;
        if result.is_ok() {
            result = served;
        }
    }
    for ended in others {
        let served = ended
            .await
            .unwrap_or_else(|_| Err(io::Error::other("an event loop ended in a panic")));
        if result.is_ok() {
            result = served;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    #[tokio::test]
    async fn every_listener_is_served_on_a_thread_of_its_own_and_all_are_awaited() {
        let threads = Arc::new(Mutex::new(Vec::new()));
        let seen = threads.clone();
        let served = serve_each(prepare(vec![1u8, 2, 3]).unwrap(), move |n| {
            let seen = seen.clone();
            async move {
                // Each loop runs on its own current-thread runtime (the
                // first on the caller's), so it can spawn there.
                tokio::spawn(async {}).await.unwrap();
                seen.lock().unwrap().push((n, std::thread::current().id()));
                Ok(())
            }
        })
        .await;
        served.unwrap();
        let threads = threads.lock().unwrap();
        let ns: BTreeSet<u8> = threads.iter().map(|(n, _)| *n).collect();
        let ids: Vec<_> = threads.iter().map(|(_, id)| *id).collect();
        let distinct = ids.iter().enumerate().all(|(i, id)| !ids[..i].contains(id));
        assert_eq!(ns, BTreeSet::from([1, 2, 3]));
        assert!(distinct && ids.len() == 3, "{threads:?}");
    }

    #[tokio::test]
    async fn an_error_or_a_panic_in_any_loop_is_the_result() {
        let failed = serve_each(prepare(vec![0u8, 1]).unwrap(), |n| async move {
            match n {
                1 => Err(io::Error::other("loop 1 failed")),
                _ => Ok(()),
            }
        })
        .await;
        assert_eq!(failed.unwrap_err().to_string(), "loop 1 failed");
        let panicked = serve_each(prepare(vec![0u8, 1]).unwrap(), |n| async move {
            assert_eq!(n, 0, "the second loop panics");
            Ok(())
        })
        .await;
        assert!(panicked.unwrap_err().to_string().contains("panic"));
    }

    #[tokio::test]
    async fn no_listener_is_nothing_to_serve() {
        serve_each(prepare(Vec::<u8>::new()).unwrap(), |_| async { Ok(()) })
            .await
            .unwrap();
    }
}
