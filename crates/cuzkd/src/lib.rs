//! cuzkd, the proving daemon: the Curio-compatible gRPC API (cuzk-proto) over the proving
//! engine (cuzk-engine), listening on the socket systemd passes (LISTEN_FDS) or on the
//! configured address, reporting READY/STATUS/WATCHDOG/STOPPING through sd_notify, draining
//! on SIGTERM. A library so that tests and tools can run a daemon in-process; the binary
//! only parses arguments.

pub mod config;
pub mod dbus;
pub mod logging;
pub mod metrics;
pub mod reload;
pub mod service;
pub mod tcp_auth;

use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use config::{BackendChoice, Config, GpusConfig};
use cuzk_engine::{Device, Engine, MemoryStatus};
use cuzk_filecoin::FilecoinRunner;
use cuzk_proto::{Address, ProvingEngineServer};
use sd_notify::NotifyState;

/// The engine's devices: GPUs by ordinal, each with its budget and workers, or the CPU.
fn devices(g: &GpusConfig) -> Result<Vec<Device>> {
    let open_gpus = || -> Result<Vec<Device>, cuzk_gpu::GpuError> {
        g.plan()
            .iter()
            .map(|p| {
                let budget = match p.vram_budget_bytes {
                    Some(b) => cuzk_gpu::VramBudget::Bytes(b as usize),
                    None => cuzk_gpu::VramBudget::default(),
                };
                let pinned = g.pinned_memory_budget_bytes.map_or(cuzk_gpu::device::DEFAULT_PINNED_BUDGET, |b| b as usize);
                let gpu = Arc::new(cuzk_gpu::GpuBackend::open_with(p.ordinal, budget, pinned, p.tuning.clone())?);
                let name = format!("gpu{} {}", p.ordinal, gpu.device().name);
                let probe = gpu.clone();
                let c = probe.arena_counters();
                log::info!(
                    "{name}: VRAM budget {} MiB, pinned host budget {} MiB, {} worker(s)",
                    c.budget >> 20,
                    pinned >> 20,
                    p.workers
                );
                let pool = gpu.clone();
                let device = Device::new(name, gpu).with_workers(p.workers).with_memory(Arc::new(move || {
                    let c = probe.arena_counters();
                    MemoryStatus {
                        budget_bytes: c.budget as u64,
                        in_use_bytes: c.in_use as u64,
                        high_water_bytes: c.high_water as u64,
                    }
                }));
                // The pool's in-use figure counts its cached blocks too: they stay page-locked.
                Ok(device.with_gpu(p.ordinal as u32, Arc::new(move || {
                    let c = pool.pinned_counters();
                    MemoryStatus {
                        budget_bytes: c.budget as u64,
                        in_use_bytes: (c.in_use + c.cached) as u64,
                        high_water_bytes: c.high_water as u64,
                    }
                })))
            })
            .collect()
    };
    Ok(match g.backend {
        BackendChoice::Cpu => vec![Device::cpu()],
        BackendChoice::Gpu => open_gpus().context("[gpus] backend = \"gpu\"")?,
        BackendChoice::Auto => match open_gpus() {
            Ok(d) => d,
            Err(e) => {
                log::warn!("no usable GPU ({e}); proving on the CPU");
                vec![Device::cpu()]
            }
        },
    })
}

fn notify(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        log::warn!("sd_notify: {e}");
    }
}

fn status_line(engine: &Engine) -> String {
    let s = engine.status();
    let line = format!("{} queued, {} running, {} completed, {} failed", s.queue_depth(), s.running, s.completed, s.failed);
    let unhealthy: Vec<&str> = s.devices.iter().filter(|d| !d.healthy).map(|d| d.name.as_str()).collect();
    if s.no_healthy_device() {
        format!("{line}; no healthy device: jobs wait for a reload")
    } else if !unhealthy.is_empty() {
        format!("{line}; unhealthy until a reload: {}", unhealthy.join(", "))
    } else {
        line
    }
}

enum Listener {
    Unix(tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener),
}

/// The name (FileDescriptorName=, LISTEN_FDNAMES) of a socket systemd passes for the
/// Prometheus endpoint (cuzk-metrics.socket) rather than for gRPC.
pub const METRICS_FD_NAME: &str = "metrics";

/// What systemd passed: the sockets for gRPC and those named [`METRICS_FD_NAME`].
struct Passed {
    grpc: Vec<std::os::fd::RawFd>,
    metrics: Vec<std::net::TcpListener>,
}

fn passed_sockets() -> Result<Passed> {
    let mut passed = Passed { grpc: Vec::new(), metrics: Vec::new() };
    for (fd, name) in sd_notify::listen_fds_with_names().context("LISTEN_FDS")? {
        if name == METRICS_FD_NAME {
            // SAFETY: systemd passed this fd to us (LISTEN_PID matched) and nothing else owns it.
            let l = unsafe { std::net::TcpListener::from_raw_fd(fd) };
            l.local_addr().with_context(|| {
                format!("fd {fd} from systemd, named {METRICS_FD_NAME:?}, is not a TCP stream socket (check ListenStream= in cuzk-metrics.socket)")
            })?;
            passed.metrics.push(l);
        } else {
            passed.grpc.push(fd);
        }
    }
    Ok(passed)
}

/// Every gRPC socket systemd passed (unix and TCP stream sockets, e.g. a socket unit with two
/// ListenStream= lines), or else the configured address, bound here.
async fn listeners(listen: &str, passed: Vec<std::os::fd::RawFd>) -> Result<Vec<Listener>> {
    let mut out = Vec::new();
    for fd in passed {
        // SAFETY: systemd passed this fd to us (LISTEN_PID matched) and nothing else owns it.
        let unix = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
        let l = if unix.local_addr().is_ok() {
            unix.set_nonblocking(true)?;
            log::info!("listening on the unix socket passed by systemd (fd {fd})");
            Listener::Unix(tokio::net::UnixListener::from_std(unix)?)
        } else {
            // Not AF_UNIX: the same fd as an inet stream socket.
            let tcp = unsafe { std::net::TcpListener::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(unix)) };
            let addr = tcp.local_addr().with_context(|| {
                format!("fd {fd} from systemd is neither a unix nor a TCP stream socket (check ListenStream= in cuzk.socket)")
            })?;
            tcp.set_nonblocking(true)?;
            log::info!("listening on {addr}, the TCP socket passed by systemd (fd {fd})");
            Listener::Tcp(tokio::net::TcpListener::from_std(tcp)?)
        };
        out.push(l);
    }
    if !out.is_empty() {
        return Ok(out);
    }
    Ok(vec![match listen.parse::<Address>()? {
        Address::Unix(path) => {
            if path.exists() {
                std::fs::remove_file(&path).with_context(|| format!("removing stale {}", path.display()))?;
            }
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let l = tokio::net::UnixListener::bind(&path)
                .with_context(|| format!("[daemon] listen: binding {}", path.display()))?;
            log::info!("listening on unix://{}", path.display());
            Listener::Unix(l)
        }
        Address::Tcp(hostport) => {
            let l = tokio::net::TcpListener::bind(&hostport)
                .await
                .with_context(|| format!("[daemon] listen: binding {hostport}"))?;
            log::info!("listening on {hostport}");
            Listener::Tcp(l)
        }
    }])
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot watch SIGTERM: {e}");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = term.recv() => log::info!("SIGTERM: draining"),
        _ = tokio::signal::ctrl_c() => log::info!("SIGINT: draining"),
    }
}

/// Runs the daemon until `shutdown` resolves, then drains. Everything `cuzkd` does.
pub async fn run(cfg: Config, shutdown: impl std::future::Future<Output = ()> + Send + 'static) -> Result<()> {
    let runner = FilecoinRunner::new(&cfg.srs.param_cache, cfg.srs.parent_cache.as_deref())
        .map_err(|e| anyhow::anyhow!("[srs]: {e}"))?;
    // Compiled circuits are saved beside the spool and found again after a restart.
    runner.save_compiled_circuits_in(&cfg.daemon.state_dir.join("compiled"));
    let runner = Arc::new(runner);
    let deferral = runner.clone();
    // Where every device is a GPU, synthesis keeps the assignment only and the GPUs evaluate
    // a, b and c from the resident compiled circuit (a fifth of the host memory per waiting
    // partition, a third of the PCIe traffic); with a CPU device among them, a, b and c are
    // evaluated in synthesis as before, so that the CPU's proving stays within its budget.
    let on_devices = move |gpus_only: bool| {
        deferral.set_deferred_evaluation(gpus_only);
        log::info!(
            "a, b and c are evaluated {}",
            if gpus_only { "on the GPUs from the compiled circuits (synthesis keeps the assignment only)" } else { "in synthesis" }
        );
    };
    serve(cfg, runner, on_devices, shutdown).await
}

/// [`run`] with another prover behind the engine: tests (the kill -9 soak runs a cheap
/// synthetic proof kind beside real PoRep) and tools. The daemon itself always uses
/// [`FilecoinRunner`].
pub async fn run_with(
    cfg: Config,
    runner: Arc<dyn cuzk_engine::ProofRunner>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    serve(cfg, runner, |_| {}, shutdown).await
}

/// [`run_with`], telling `on_devices` whether every device it opened is a GPU before the
/// engine starts.
async fn serve(
    cfg: Config,
    runner: Arc<dyn cuzk_engine::ProofRunner>,
    on_devices: impl FnOnce(bool),
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    // The TCP listeners' certificates, key and token, read once: a bad file stops the start.
    let tcp_auth = cfg.daemon.tcp.load()?;
    // Synthesis's pools take their priority and huge pages once, before the first job.
    cuzk_filecoin::synthesis::configure(cfg.synthesis.tuning()).map_err(|e| anyhow::anyhow!("[synthesis]: {e}"))?;
    // D-Bus first, so that `State` reads "starting" while the engine recovers its spool.
    let control = dbus::Control::start(cfg.dbus.bus).await;
    let devices = devices(&cfg.gpus)?;
    let gpus_opened = devices.iter().filter(|d| d.ordinal.is_some()).count();
    on_devices(gpus_opened > 0 && gpus_opened == devices.len());
    let ec = cfg.engine_config(gpus_opened);
    let engine = tokio::task::spawn_blocking(move || Engine::start(ec, runner, devices))
        .await??;
    let reloader = Arc::new(reload::Reloader::new(cfg.clone(), engine.clone(), gpus_opened));
    control.attach(&engine, &reloader);
    // `systemctl reload cuzk` (ExecReload= sends SIGHUP; Type=notify-reload does too).
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::hangup()) {
            Ok(mut hup) => {
                let r = reloader.clone();
                tokio::spawn(async move {
                    while hup.recv().await.is_some() {
                        let r = r.clone();
                        let _ = tokio::task::spawn_blocking(move || reload::reload_and_notify(&r, "SIGHUP")).await;
                    }
                });
            }
            Err(e) => log::error!("cannot watch SIGHUP ({e}): `systemctl reload` will not reload"),
        }
    }
    logging::log_job_events(&engine);

    let max = cfg.daemon.max_message_bytes;
    let service = ProvingEngineServer::new(service::ProvingService { engine: engine.clone() })
        .max_decoding_message_size(max)
        .max_encoding_message_size(max);

    // Keep STATUS= current for `systemctl status`, and ping the watchdog (WatchdogSec=) at
    // half its interval: a daemon whose runtime stalls stops pinging and is restarted.
    let watchdog = sd_notify::watchdog_enabled();
    let period = watchdog.map_or(Duration::from_secs(5), |w| (w / 2).min(Duration::from_secs(5)));
    let e = engine.clone();
    tokio::spawn(async move {
        loop {
            let line = status_line(&e);
            if watchdog.is_some() {
                notify(&[NotifyState::Watchdog, NotifyState::Status(&line)]);
            } else {
                notify(&[NotifyState::Status(&line)]);
            }
            tokio::time::sleep(period).await;
        }
    });

    let passed = passed_sockets()?;
    let listeners = listeners(&cfg.daemon.listen, passed.grpc).await?;
    let metrics_listeners = metrics::listeners(cfg.metrics.listen.as_deref(), passed.metrics).await?;
    // `[daemon] listen` was checked with the config; a TCP socket from systemd is known only now.
    for listener in &listeners {
        if let Listener::Tcp(l) = listener {
            tcp_auth.admit(&l.local_addr().map_or_else(|_| "from systemd".into(), |a| a.to_string()))?;
        }
    }
    notify(&[NotifyState::Ready, NotifyState::Status(&status_line(&engine))]);
    // One server per listening socket, all serving the same service, all stopped together.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|&stop| stop).await;
    };
    let mut servers = tokio::task::JoinSet::new();
    // Unix sockets are governed by their file mode and group; TCP by `[daemon.tcp]` (TLS on
    // the server's builder, the bearer token around the service).
    // What every listener's server shares: the per-connection stream limit, so that one
    // client cannot open calls without bound.
    let streams = cfg.daemon.max_concurrent_streams;
    let builder = || tonic::transport::Server::builder().max_concurrent_streams(Some(streams));
    for listener in listeners {
        let stop = stopped(stop_rx.clone());
        match listener {
            Listener::Unix(l) => {
                let router = builder().add_service(service.clone());
                servers.spawn(router.serve_with_incoming_shutdown(tokio_stream::wrappers::UnixListenerStream::new(l), stop));
            }
            Listener::Tcp(l) => {
                let checked = tonic::service::interceptor::InterceptedService::new(service.clone(), tcp_auth.bearer_check());
                let router = tcp_auth.with_tls(builder())?.add_service(checked);
                servers.spawn(router.serve_with_incoming_shutdown(tokio_stream::wrappers::TcpListenerStream::new(l), stop));
            }
        }
    }
    // The metrics endpoint outlives the gRPC servers: it answers through the drain, so that
    // a scrape sees the last jobs end.
    let (metrics_stop_tx, metrics_stop_rx) = tokio::sync::watch::channel(false);
    let mut metrics_servers = tokio::task::JoinSet::new();
    for l in metrics_listeners {
        metrics_servers.spawn(metrics::serve(l, engine.clone(), stopped(metrics_stop_rx.clone())));
    }
    let mut served = Ok(());
    tokio::select! {
        _ = shutdown => {}
        // A server that ends by itself failed: stop the others and report it.
        Some(r) = servers.join_next() => served = r.map_err(anyhow::Error::from).and_then(|r| r.map_err(anyhow::Error::from)),
    }
    let _ = stop_tx.send(true);
    while let Some(r) = servers.join_next().await {
        if let Err(e) = r.map_err(anyhow::Error::from).and_then(|r| r.map_err(anyhow::Error::from)) {
            served = served.and(Err(e));
        }
    }
    notify(&[NotifyState::Stopping, NotifyState::Status("draining")]);
    // drain_timeout_secs as in force now (a reload may have changed it).
    let timeout = reloader.current().drain_timeout();
    let report = tokio::task::spawn_blocking(move || engine.drain(timeout)).await?;
    log::info!("drained: {report:?}");
    let _ = metrics_stop_tx.send(true);
    while let Some(r) = metrics_servers.join_next().await {
        if let Err(e) = r.map_err(anyhow::Error::from).and_then(|r| r.map_err(anyhow::Error::from)) {
            log::warn!("metrics endpoint: {e:#}");
        }
    }
    if let Err(e) = served {
        bail!("gRPC server: {e:#}");
    }
    Ok(())
}

