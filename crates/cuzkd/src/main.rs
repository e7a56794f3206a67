//! The `cuzkd` binary: arguments, logging, runtime; the daemon is [`cuzkd::run`].

use std::path::PathBuf;
use std::process::ExitCode;

use cuzkd::config::{Config, DEFAULT_CONFIG};

fn usage() -> ! {
    eprintln!("usage: cuzkd [--config PATH]   (default {DEFAULT_CONFIG}; a missing file means defaults)");
    std::process::exit(2)
}

fn config_path() -> PathBuf {
    let mut args = std::env::args().skip(1);
    let mut path = PathBuf::from(DEFAULT_CONFIG);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--config" | "-c" => path = args.next().map(PathBuf::from).unwrap_or_else(|| usage()),
            "--version" => {
                println!("cuzkd {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0)
            }
            _ => usage(),
        }
    }
    path
}

fn main() -> ExitCode {
    let path = config_path();
    let cfg = match Config::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cuzkd: {e}");
            return ExitCode::from(2);
        }
    };
    let target = cuzkd::logging::init(&cfg.log);
    tracing::info!("cuzkd {} starting (config {}, logs to {target})", env!("CARGO_PKG_VERSION"), path.display());
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cuzkd: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(cuzkd::run(cfg, cuzkd::shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzkd: {}", cuzk_proto::error_text(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}
