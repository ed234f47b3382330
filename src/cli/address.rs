//! The address flags' values, checked by clap as they are read: a value
//! that is not an address is a bad argument (exit 2, clap names the flag),
//! while an address that cannot be bound or resolved is a failed start
//! (exit 3, when the command tries).

use std::net::SocketAddr;

/// What a `--listen` takes, for the message of a value that is not one.
const LISTEN_FORM: &str =
    "expected host:port, such as 127.0.0.1:8080 (a port from 0 to 65535; 0 picks a free one)";

/// What a flag that takes an IP address and a port expects.
const SOCKET_FORM: &str = "expected host:port with an IP address for host, such as 127.0.0.1:9090";

/// `--listen`: `host:port`, the host an IP address or a name (resolved at
/// start). The value is kept as written.
pub fn listen(text: &str) -> Result<String, String> {
    if text.parse::<SocketAddr>().is_ok() {
        return Ok(text.to_string());
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("no port: {LISTEN_FORM}"));
    };
    let name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
    if host.is_empty() || !host.chars().all(name) {
        return Err(format!("`{host}` is not a host: {LISTEN_FORM}"));
    }
    port.parse::<u16>()
        .map_err(|_| format!("`{port}` is not a port: {LISTEN_FORM}"))?;
    Ok(text.to_string())
}

/// `--metrics-listen`, `--control`: an IP address and a port.
pub fn socket(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| SOCKET_FORM.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_address_is_an_ip_or_a_name_with_a_port_kept_as_written() {
        for ok in [
            "127.0.0.1:0",
            "[::1]:8080",
            "localhost:9000",
            "my-host.local:65535",
        ] {
            assert_eq!(listen(ok).as_deref(), Ok(ok));
        }
        for bad in [
            "nope",
            "localhost",
            "127.0.0.1:70000",
            ":8080",
            "a b:80",
            "host:port",
        ] {
            let err = listen(bad).unwrap_err();
            assert!(err.contains("expected host:port"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_socket_address_needs_an_ip_and_a_port() {
        assert_eq!(socket("127.0.0.1:9090"), Ok(([127, 0, 0, 1], 9090).into()));
        for bad in ["localhost:9090", "127.0.0.1", ":9", "127.0.0.1:70000"] {
            assert!(
                socket(bad).unwrap_err().contains("expected host:port"),
                "{bad}"
            );
        }
    }
}
