//! Zero-copy pass-through between two TCP sockets: each direction moves
//! its bytes with splice(2), socket to pipe and pipe to socket, so they
//! never enter user space. It keeps the contract of the copying
//! [`OneWay`](super::pass): the pipe is emptied into the writer before
//! anything more is read, so stopping for a fault list change loses no
//! byte, and the counters see each chunk as it passes.

use std::io;
use std::os::fd::OwnedFd;
use std::task::{Context, Poll, ready};

use rustix::pipe::{PipeFlags, SpliceFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;

use super::CHUNK;
use super::pass::Flow;
use crate::fault::Direction;
use crate::proxy::Traffic;

/// One direction: a pipe between the reading and the writing socket.
pub(super) struct SpliceWay {
    /// Which way, for the byte counters.
    dir: Direction,
    /// The pipe's read end (towards the writer).
    out: OwnedFd,
    /// The pipe's write end (from the reader).
    into: OwnedFd,
    /// Bytes in the pipe, still to be written.
    queued: usize,
    /// EOF was read; the half-close is owed to the writer.
    eof: bool,
    /// Ended (EOF passed on) or stopped for a change.
    finished: Option<Flow>,
}

/// The flags of every splice: move pages rather than copy them, and never
/// block on the pipe (the sockets are non-blocking already).
const FLAGS: SpliceFlags = SpliceFlags::MOVE.union(SpliceFlags::NONBLOCK);

impl SpliceWay {
    /// A direction with its own pipe; fails when no pipe can be had (out of
    /// file descriptors), and the caller copies instead.
    pub(super) fn new(dir: Direction) -> io::Result<SpliceWay> {
        let (out, into) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        Ok(SpliceWay {
            dir,
            out,
            into,
            queued: 0,
            eof: false,
            finished: None,
        })
    }

    /// Moves data from `reader` to `writer` until it would block; ready
    /// when the direction ended or, with `stop`, the pipe is empty.
    pub(super) fn poll_copy(
        &mut self,
        cx: &mut Context<'_>,
        reader: &TcpStream,
        writer: &TcpStream,
        stop: bool,
        traffic: &Traffic,
    ) -> Poll<io::Result<Flow>> {
        loop {
            if let Some(flow) = self.finished {
                return Poll::Ready(Ok(flow));
            }
            if self.queued > 0 {
                ready!(writer.poll_write_ready(cx))?;
                let moved = writer.try_io(Interest::WRITABLE, || {
                    Ok(rustix::pipe::splice(
                        &self.out,
                        None,
                        writer,
                        None,
                        self.queued,
                        FLAGS,
                    )?)
                });
                match moved {
                    Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Ok(n) => {
                        self.queued -= n;
                        traffic.add_sent(self.dir, n);
                    }
                    // Readiness was cleared: the next poll registers.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
                continue;
            }
            if self.eof {
                socket2::SockRef::from(writer).shutdown(std::net::Shutdown::Write)?;
                self.finished = Some(Flow::Ended);
                continue;
            }
            if stop {
                self.finished = Some(Flow::Changed);
                continue;
            }
            ready!(reader.poll_read_ready(cx))?;
            let moved = reader.try_io(Interest::READABLE, || {
                Ok(rustix::pipe::splice(
                    reader, None, &self.into, None, CHUNK, FLAGS,
                )?)
            });
            match moved {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.queued = n;
                    traffic.add_received(self.dir, n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}
