//! The Prometheus scrape endpoint: `GET /metrics` over HTTP on `[metrics] listen` or on the
//! socket systemd passes under the name `metrics` (cuzk-metrics.socket). The text is the
//! engine's ([`cuzk_engine::metrics`]) with the build's own line; `GetMetrics` returns the
//! same.

use std::future::Future;

use anyhow::{Context, Result};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use cuzk_engine::Engine;

/// The content type of Prometheus' text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The engine's metrics and `cuzk_build_info`.
pub fn text(engine: &Engine) -> String {
    let mut out = engine.metrics_text();
    out.push_str(&build_info());
    out
}

/// One gauge at 1 whose labels say what runs: the version and whether the GPU kernels were
/// compiled in (a build without nvcc proves on the CPU only).
fn build_info() -> String {
    format!(
        "# HELP cuzk_build_info The running cuzkd: its version and whether it has GPU kernels.\n\
         # TYPE cuzk_build_info gauge\n\
         cuzk_build_info{{version=\"{}\",gpu_kernels=\"{}\"}} 1\n",
        env!("CARGO_PKG_VERSION"),
        cuzk_gpu::kernels::kernels_built()
    )
}

/// The listeners: every socket systemd passed as `metrics`, else `[metrics] listen` bound
/// here (a failure names the address), else none.
pub async fn listeners(listen: Option<&str>, passed: Vec<std::net::TcpListener>) -> Result<Vec<tokio::net::TcpListener>> {
    let mut out = Vec::new();
    for l in passed {
        l.set_nonblocking(true)?;
        log::info!("metrics: serving /metrics on {}, the socket passed by systemd", describe(&l));
        out.push(tokio::net::TcpListener::from_std(l)?);
    }
    if out.is_empty() {
        if let Some(addr) = listen {
            let l = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("[metrics] listen: binding {addr}"))?;
            log::info!("metrics: serving /metrics on http://{}", l.local_addr().map_or(addr.to_string(), |a| a.to_string()));
            out.push(l);
        }
    }
    Ok(out)
}

fn describe(l: &std::net::TcpListener) -> String {
    l.local_addr().map_or_else(|_| "an unknown address".into(), |a| format!("http://{a}"))
}

/// Serves `/metrics` on `listener` until `stop` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    engine: Engine,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let scrape = move || {
        let engine = engine.clone();
        async move { ([(header::CONTENT_TYPE, CONTENT_TYPE)], text(&engine)) }
    };
    let app = axum::Router::new()
        .route("/metrics", get(scrape))
        .route("/", get(|| async { "cuzkd: Prometheus metrics at /metrics\n" }))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found: cuzkd serves /metrics\n").into_response() });
    axum::serve(listener, app).with_graceful_shutdown(stop).await
}
