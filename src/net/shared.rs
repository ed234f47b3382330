//! An accepted TCP connection that a server's codec and its watch on the
//! client's hang-up ([`crate::http::fin`]) share: one descriptor and one
//! registration with the runtime per connection, where a duplicated
//! descriptor used to cost a second one (500 idle clients were 1,000
//! descriptors).
//!
//! Sharing one registration means the watch's look at the socket (a peek
//! that finds bytes the codec has not read yet, then waits for the next
//! event) spends a readiness the codec may also be waiting for. So the
//! watch says when it spent one ([`SharedTcp::spent`]), and the next read
//! here tries the socket before it asks the runtime: a readiness spent by
//! the watch never leaves bytes unread. Otherwise a read asks the runtime
//! first, so that a codec looking for more where nothing came makes no
//! system call, and a read that took less than it could spends the
//! readiness (the socket was drained), so that neither the codec's next
//! read nor the watch's first look goes to the socket before the next
//! bytes or the client's FIN come.

use std::io;
use std::io::Read;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

use super::Transport;

/// The most one read takes.
const SCRATCH: usize = 64 * 1024;

/// An accepted client connection, shareable with a watch on its socket.
#[derive(Debug, Clone)]
pub struct SharedTcp {
    /// The one socket, registered once; the watch holds another handle.
    stream: Arc<TcpStream>,
    /// Set by the watch when it spent a read readiness; the next read
    /// tries the socket whatever the runtime says.
    spent: Arc<AtomicBool>,
}

impl SharedTcp {
    /// Shares `stream`.
    pub fn new(stream: TcpStream) -> SharedTcp {
        SharedTcp {
            stream: Arc::new(stream),
            spent: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag a watch sets when it spent a read readiness of the socket.
    pub fn spent(&self) -> Arc<AtomicBool> {
        self.spent.clone()
    }

    /// The socket, for a watch that looks at it without reading.
    pub fn socket(&self) -> Arc<TcpStream> {
        self.stream.clone()
    }

    /// Reads what the socket has now, whatever the runtime last saw of it.
    ///
    /// The bytes land in a buffer of the thread's, zeroed once, and are
    /// copied into `buf`: a codec hands over memory never written
    /// (hyper's spare capacity, 8 KiB and more), and a safe read into it
    /// would zero all of it first, on every read (an empty one too),
    /// where the copy costs the bytes that came.
    fn read_now(&self, buf: &mut ReadBuf<'_>) -> io::Result<()> {
        thread_local! {
            static BYTES: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; SCRATCH]);
        }
        let socket = socket2::SockRef::from(&*self.stream);
        let want = buf.remaining().min(SCRATCH);
        BYTES.with_borrow_mut(|bytes| {
            let n = (&*socket).read(&mut bytes[..want])?;
            buf.put_slice(&bytes[..n]);
            Ok(())
        })
    }
}

impl Transport for SharedTcp {
    fn reset_on_close(&self) {
        self.stream.reset_on_close();
    }
    fn shared_tcp(&self) -> Option<Arc<TcpStream>> {
        Some(self.socket())
    }
    fn read_spent(&self) -> Option<Arc<AtomicBool>> {
        Some(self.spent())
    }
}

impl AsyncRead for SharedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            if self.spent.swap(false, Ordering::AcqRel) {
                match self.read_now(buf) {
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                    done => return Poll::Ready(done),
                }
            }
            ready!(self.stream.poll_read_ready(cx))?;
            // Readable, says the runtime (perhaps from before the last
            // read). A read that finds nothing spends that readiness, and
            // the next round waits for the next event. So does a read that
            // took less than it could: the socket was drained, as tokio's
            // own reads judge on Linux. The runtime clears only the
            // readiness it had seen before this read (an event that came
            // during it stays), and never a FIN's.
            let want = buf.remaining();
            let mut drained = false;
            match self.stream.try_io(Interest::READABLE, || {
                let before = buf.filled().len();
                self.read_now(buf)?;
                let n = buf.filled().len() - before;
                if 0 < n && n < want.min(SCRATCH) {
                    drained = true;
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(())
            }) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock && drained => {
                    return Poll::Ready(Ok(()));
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                done => return Poll::Ready(done),
            }
        }
    }
}

impl AsyncWrite for SharedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            match self.stream.try_write(buf) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                done => return Poll::Ready(done),
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            match self.stream.try_write_vectored(bufs) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                done => return Poll::Ready(done),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(socket2::SockRef::from(&*self.stream).shutdown(std::net::Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// A client connected to a [`SharedTcp`] over loopback.
    async fn pair() -> (TcpStream, SharedTcp) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, SharedTcp::new(server))
    }

    /// Whether the runtime says the socket is readable now.
    async fn ready_now(shared: &SharedTcp) -> bool {
        poll_fn(|cx| Poll::Ready(shared.stream.poll_read_ready(cx).is_ready())).await
    }

    /// Reads once into a buffer of `len` bytes, within a generous bound.
    async fn read(shared: &mut SharedTcp, len: usize) -> Vec<u8> {
        let mut buf = vec![0; len];
        let n = tokio::time::timeout(Duration::from_secs(10), shared.read(&mut buf))
            .await
            .expect("the read waited for an event that had come")
            .unwrap();
        buf.truncate(n);
        buf
    }

    /// Waits until the runtime has seen the socket readable (bytes, a
    /// FIN or a reset); a runtime that never does fails the test after
    /// 10 s instead of hanging it.
    async fn readable(shared: &SharedTcp) {
        tokio::time::timeout(Duration::from_secs(10), shared.stream.readable())
            .await
            .expect("the runtime never saw the socket readable")
            .unwrap();
    }

    /// A read on a socket with nothing to read waits (it neither fails
    /// nor reads as the end; a slow machine only makes it wait longer),
    /// and reads `bytes` once the client sends them.
    async fn waits_then_reads(client: &mut TcpStream, shared: &mut SharedTcp, bytes: &[u8]) {
        let mut buf = [0; 16];
        let waited = tokio::time::timeout(Duration::from_millis(200), shared.read(&mut buf)).await;
        assert!(waited.is_err(), "the read ended: {waited:?}");
        client.write_all(bytes).await.unwrap();
        assert_eq!(read(shared, 1024).await, bytes);
    }

    #[tokio::test]
    async fn a_read_that_takes_less_than_it_could_spends_the_readiness_and_the_next_bytes_wake_it()
    {
        let (mut client, mut shared) = pair().await;
        client.write_all(b"hello").await.unwrap();
        assert_eq!(read(&mut shared, 1024).await, b"hello");
        // Drained: a look at the socket now would find nothing.
        assert!(!ready_now(&shared).await);
        client.write_all(b"again").await.unwrap();
        assert_eq!(read(&mut shared, 1024).await, b"again");
    }

    #[tokio::test]
    async fn a_read_that_fills_its_buffer_keeps_the_readiness_for_the_bytes_left() {
        let (mut client, mut shared) = pair().await;
        client.write_all(b"0123456789abcdef").await.unwrap();
        // Both halves are there before the first read.
        while shared.stream.peek(&mut [0; 16]).await.unwrap() < 16 {
            tokio::task::yield_now().await;
        }
        assert_eq!(read(&mut shared, 8).await, b"01234567");
        assert!(ready_now(&shared).await);
        assert_eq!(read(&mut shared, 8).await, b"89abcdef");
        // Taken to the last byte, with the readiness kept: the next read
        // finds nothing and waits, it does not read as the end.
        waits_then_reads(&mut client, &mut shared, b"more").await;
    }

    #[tokio::test]
    async fn a_hang_up_behind_the_last_bytes_stays_readable_after_they_are_read() {
        let (mut client, mut shared) = pair().await;
        client.write_all(b"bye").await.unwrap();
        client.shutdown().await.unwrap();
        let fin_seen = async {
            while !shared
                .stream
                .ready(Interest::READABLE)
                .await
                .unwrap()
                .is_read_closed()
            {
                // Lets the runtime see the FIN's event.
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), fin_seen)
            .await
            .expect("the runtime never saw the client's FIN");
        assert_eq!(read(&mut shared, 1024).await, b"bye");
        assert!(ready_now(&shared).await);
        assert_eq!(read(&mut shared, 1024).await, b"");
    }

    #[tokio::test]
    async fn a_readiness_the_watch_spent_on_nothing_leaves_the_read_waiting_not_failed() {
        let (mut client, mut shared) = pair().await;
        // The watch looked and found nothing (a spurious wake); the
        // codec's next read tries the socket first, finds nothing, and
        // waits for the next event.
        shared.spent().store(true, Ordering::Release);
        waits_then_reads(&mut client, &mut shared, b"late").await;
    }

    #[tokio::test]
    async fn a_reset_reads_as_an_error_not_as_the_end_whether_or_not_the_watch_spent_a_readiness() {
        for spent in [false, true] {
            let (client, mut shared) = pair().await;
            // A close with linger 0 sends an RST.
            socket2::SockRef::from(&client)
                .set_linger(Some(Duration::ZERO))
                .unwrap();
            drop(client);
            readable(&shared).await;
            shared.spent().store(spent, Ordering::Release);
            let mut buf = [0; 16];
            let read = tokio::time::timeout(Duration::from_secs(10), shared.read(&mut buf))
                .await
                .expect("the reset was not seen");
            assert_eq!(
                read.map_err(|e| e.kind()),
                Err(io::ErrorKind::ConnectionReset),
                "spent: {spent}"
            );
        }
    }

    #[tokio::test]
    async fn a_read_into_a_buffer_partly_filled_judges_the_drain_by_the_bytes_it_brought() {
        let (mut client, mut shared) = pair().await;
        client.write_all(b"12345").await.unwrap();
        readable(&shared).await;
        // Six bytes already in a buffer of sixteen: ten to take, five come.
        let mut bytes = [0u8; 16];
        let mut buf = ReadBuf::new(&mut bytes);
        buf.put_slice(b"abcdef");
        poll_fn(|cx| Pin::new(&mut shared).poll_read(cx, &mut buf))
            .await
            .unwrap();
        assert_eq!(buf.filled(), b"abcdef12345");
        assert!(!ready_now(&shared).await);
    }
}
