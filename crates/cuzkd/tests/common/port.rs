//! A TCP port for a test daemon to listen on.

use std::sync::atomic::{AtomicU16, Ordering};

/// A free port on 127.0.0.1 below the kernel's ephemeral range
/// (`/proc/sys/net/ipv4/ip_local_port_range`). A port from `bind("127.0.0.1:0")` lies inside
/// that range, from which the kernel also takes every other `bind(0)` and every client's
/// source port, so between the test's release of it and the daemon's bind another socket may
/// take it. Below the range only these tests pick ports, and successive calls in one process
/// return different ones, so parallel tests do not race for one.
pub fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (first, span) = (low.saturating_sub(12_000).max(1024), low.saturating_sub(1024).min(12_000).max(1));
    // Processes running at once (test binaries of other crates) start at different places.
    let start = (std::process::id() % span as u32) as u16;
    for _ in 0..span {
        let offset = (start as u32 + NEXT.fetch_add(1, Ordering::Relaxed) as u32) % span as u32;
        let port = first + offset as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free TCP port on 127.0.0.1 between {first} and {}", first as u32 + span as u32);
}
