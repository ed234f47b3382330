//! The clean path of TCP mode: copying both ways with no fault, stopping
//! between chunks when the fault list changes.

use std::pin::Pin;
use std::task::{Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;

use super::CHUNK;
use super::verdict::{Verdict, finish};
use crate::fault::Direction;
use crate::net::Transport;
use crate::proxy::Traffic;

/// How a pass-through connection ended.
pub(super) enum PassThrough<S, U> {
    /// Both sides closed, or one failed and both were reset: the
    /// connection is over.
    Done,
    /// The fault list changed: go on through the fault pumps.
    Changed {
        /// The client side.
        client: S,
        /// The upstream side.
        upstream: U,
        /// Per [`Direction`]: whether that way already ended (FIN passed on).
        closed: [bool; 2],
    },
}

/// How one direction of a pass-through stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// EOF read and passed on as a half-close.
    Ended,
    /// The fault list changed; stopped between chunks, nothing in flight.
    Changed,
}

/// Copies both ways until both sides have closed or the fault list changes;
/// a FIN from one side is passed on as a half-close to the other. One task
/// polls both directions on the whole streams (no split, no lock), and the
/// wait for a change is registered once.
pub(super) async fn pass_through<S: Transport, U: Transport>(
    mut client: S,
    mut upstream: U,
    mut changes: watch::Receiver<u64>,
    traffic: &Traffic,
) -> PassThrough<S, U> {
    let mut up = OneWay::new(Direction::Upstream);
    let mut down = OneWay::new(Direction::Downstream);
    let changed = changes.changed();
    tokio::pin!(changed);
    let mut stop = false;
    let flows = std::future::poll_fn(|cx| {
        if !stop && changed.as_mut().poll(cx).is_ready() {
            stop = true;
        }
        let a = up.poll_copy(
            cx,
            Pin::new(&mut client),
            Pin::new(&mut upstream),
            stop,
            traffic,
        );
        let b = down.poll_copy(
            cx,
            Pin::new(&mut upstream),
            Pin::new(&mut client),
            stop,
            traffic,
        );
        match (a, b) {
            (Poll::Ready(Err(e)), _) | (_, Poll::Ready(Err(e))) => Poll::Ready(Err(e)),
            (Poll::Ready(Ok(a)), Poll::Ready(Ok(b))) => Poll::Ready(Ok((a, b))),
            _ => Poll::Pending,
        }
    })
    .await;
    match flows {
        Ok((Flow::Ended, Flow::Ended)) => PassThrough::Done,
        Ok((up, down)) => PassThrough::Changed {
            client,
            upstream,
            closed: [up == Flow::Ended, down == Flow::Ended],
        },
        Err(err) => {
            tracing::trace!(%err, "connection ended with an error");
            finish(client, Some(upstream), Verdict::ABORTED);
            PassThrough::Done
        }
    }
}

/// One direction of [`pass_through`]: a buffer that is written out whole
/// before anything else is read, so stopping for a change loses no byte.
struct OneWay {
    /// Which way, for the byte counters.
    dir: Direction,
    /// The chunk being passed on.
    buf: Box<[u8]>,
    /// How much of `buf` was written already.
    pos: usize,
    /// How much of `buf` holds data.
    cap: usize,
    /// EOF was read; the half-close is owed to the writer.
    eof: bool,
    /// Ended (EOF passed on) or stopped for a change.
    finished: Option<Flow>,
}

impl OneWay {
    fn new(dir: Direction) -> OneWay {
        OneWay {
            dir,
            buf: vec![0u8; CHUNK].into_boxed_slice(),
            pos: 0,
            cap: 0,
            eof: false,
            finished: None,
        }
    }

    /// Moves data from `reader` to `writer` until it would block; ready
    /// when the direction ended or, with `stop`, reached a chunk boundary.
    fn poll_copy<R: AsyncRead + ?Sized, W: AsyncWrite + ?Sized>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        mut reader: Pin<&mut R>,
        mut writer: Pin<&mut W>,
        stop: bool,
        traffic: &Traffic,
    ) -> Poll<std::io::Result<Flow>> {
        loop {
            if let Some(flow) = self.finished {
                return Poll::Ready(Ok(flow));
            }
            if self.pos < self.cap {
                let n = ready!(
                    writer
                        .as_mut()
                        .poll_write(cx, &self.buf[self.pos..self.cap])
                )?;
                if n == 0 {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                self.pos += n;
                traffic.add_sent(self.dir, n);
                continue;
            }
            if self.eof {
                ready!(writer.as_mut().poll_shutdown(cx))?;
                self.finished = Some(Flow::Ended);
                continue;
            }
            if stop {
                self.finished = Some(Flow::Changed);
                continue;
            }
            let mut read = ReadBuf::new(&mut self.buf);
            ready!(reader.as_mut().poll_read(cx, &mut read))?;
            let n = read.filled().len();
            if n == 0 {
                self.eof = true;
            } else {
                traffic.add_received(self.dir, n);
                self.pos = 0;
                self.cap = n;
            }
        }
    }
}
