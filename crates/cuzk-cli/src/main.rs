//! The `cuzk-bench` binary: cuzk's client, shipped beside cuzkd. Upstream cuzk's command
//! lines (single, batch, status, preload, metrics) work unchanged; cancel, prove and verify
//! are cuzk's. The lab's commands are in `cuzk-lab` (crate cuzk-bench), not shipped.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use cuzk_cli::client;
use cuzk_cli::offline::{self, print_timings, secs, select_backend, BackendKind, VerifyArgs, DEFAULT_MINER_ID};

#[derive(Parser)]
#[command(name = "cuzk-bench", version, about = "cuzk's client: proofs through cuzkd, and offline prove and verify")]
struct Cli {
    // How to reach cuzkd (single, batch, status, cancel, preload, metrics): global, so
    // before or after the subcommand.
    #[command(flatten)]
    daemon: DaemonArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// One proof through a running cuzkd.
    Single {
        #[command(flatten)]
        input: InputArgs,
        /// Request id (idempotency key) [default: PoRep: a fresh one; the other kinds: the
        /// one Curio gives the proof, e.g. winpost-<miner>-<randomness[:8] in hex>].
        #[arg(long)]
        request_id: Option<String>,
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Many proofs through a running cuzkd; prints the batch report.
    Batch {
        #[command(flatten)]
        input: InputArgs,
        /// Number of proofs.
        #[arg(short = 'c', long, default_value_t = 1)]
        count: usize,
        /// Proofs in flight at once.
        #[arg(short = 'j', long, default_value_t = 1)]
        concurrency: usize,
        /// Write each proof to DIR/proof-<i>.bin.
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
    /// The daemon's queues, workers and resident parameters.
    Status,
    /// Cancel a job (queued, or running: it stops at its next stage).
    Cancel { job_id: String },
    /// Load a circuit's parameters into the daemon ahead of work (e.g. porep-32g).
    Preload { circuit_id: String },
    /// The daemon's Prometheus metrics.
    Metrics,
    /// Prove a PoRep C1 output (PoRep commit phase 2) in this process, without a daemon, and
    /// write the proof bytes (verified with filecoin-proofs first).
    Prove {
        /// C1 output: bare SealCommitPhase1Output JSON or a lotus-bench envelope.
        #[arg(long)]
        c1: PathBuf,
        /// Directory with the parameter files (Filecoin naming).
        #[arg(long)]
        param_cache: PathBuf,
        /// Miner actor id the sector was sealed by (gives the prover id).
        #[arg(long, default_value_t = DEFAULT_MINER_ID)]
        miner_id: u64,
        /// Sector number [default: the envelope's SectorNum].
        #[arg(long)]
        sector_id: Option<u64>,
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendKind,
        #[arg(long)]
        out: PathBuf,
    },
    /// filecoin-proofs' verify_seal on a PoRep proof file, in this process: fails unless it
    /// verifies.
    Verify(VerifyArgs),
}

/// Global: `cuzk-bench -a ADDR batch ...` and `cuzk-bench batch -a ADDR ...` alike.
#[derive(clap::Args)]
struct DaemonArgs {
    /// cuzkd's address: unix:///path, host:port or http://host:port.
    #[arg(
        short = 'a',
        long = "addr",
        default_value = "unix:///run/cuzk/cuzk.sock",
        global = true,
        help_heading = "Daemon connection"
    )]
    addr: String,
    /// Bearer token file, for a TCP listener that requires one ([daemon.tcp] token_file).
    #[arg(long, env = "CUZK_TOKEN_FILE", global = true, help_heading = "Daemon connection")]
    token_file: Option<PathBuf>,
    /// CA certificate (PEM) that signed the daemon's TLS certificate: connect with TLS.
    #[arg(long, env = "CUZK_TLS_CA", global = true, help_heading = "Daemon connection")]
    tls_ca: Option<PathBuf>,
    /// Client certificate (PEM), for a daemon that requires one ([daemon.tcp] tls_client_ca).
    #[arg(long, env = "CUZK_TLS_CERT", requires = "tls_key", global = true, help_heading = "Daemon connection")]
    tls_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, env = "CUZK_TLS_KEY", requires = "tls_cert", global = true, help_heading = "Daemon connection")]
    tls_key: Option<PathBuf>,
}

impl DaemonArgs {
    fn daemon(&self) -> client::Daemon {
        let auth = cuzk_proto::ClientAuth {
            token_file: self.token_file.clone(),
            tls_ca: self.tls_ca.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
        };
        client::Daemon { addr: self.addr.clone(), auth }
    }
}

/// What to prove: the proof type and its input.
#[derive(clap::Args)]
struct InputArgs {
    /// Proof type: porep, snap, wpost or winning.
    #[arg(short = 't', long = "type", value_name = "porep|snap|wpost|winning", default_value = "porep",
          value_parser = client::ProofType::parse)]
    kind: client::ProofType,
    /// -t porep: the C1 output, bare SealCommitPhase1Output JSON or a lotus-bench envelope.
    #[arg(long)]
    c1: Option<PathBuf>,
    /// -t snap|wpost|winning: the request's fields as JSON (base64 bytes; the format of
    /// `cuzk-lab gen-fixture`'s kinds/*.json).
    #[arg(long, value_name = "PATH")]
    input: Option<PathBuf>,
    /// Miner actor id [default: porep 1000, upstream's default; the other kinds the input's].
    #[arg(long)]
    miner_id: Option<u64>,
    /// Sector number [default: porep the envelope's SectorNum; snap the input's].
    #[arg(long, alias = "sector-num")]
    sector_id: Option<u64>,
}

impl InputArgs {
    fn load(&self) -> Result<client::ProofInput> {
        use client::ProofType;
        match self.kind {
            ProofType::PoRep => {
                if self.input.is_some() {
                    bail!("--input is for -t snap|wpost|winning; -t porep takes --c1 PATH");
                }
                let c1 = self.c1.as_deref().context(
                    "-t porep needs --c1 PATH: a C1 output (bare SealCommitPhase1Output JSON or a lotus-bench envelope)",
                )?;
                client::ProofInput::porep(c1, self.miner_id.unwrap_or(DEFAULT_MINER_ID), self.sector_id)
            }
            kind => {
                if self.c1.is_some() {
                    bail!("--c1 is for -t porep; -t {kind} reads its request's fields from --input PATH (JSON)");
                }
                let path = self.input.as_deref().with_context(|| {
                    format!("-t {kind} needs --input PATH: the request's fields as JSON (`cuzk-lab gen-fixture` makes the 2 KiB test ones)")
                })?;
                client::ProofInput::load(kind, path, self.miner_id, self.sector_id)
            }
        }
    }
}

fn block_on<T>(f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(f)
}

fn run(cli: Cli) -> Result<()> {
    let daemon = cli.daemon.daemon();
    match cli.cmd {
        Cmd::Single { input, request_id, out } => {
            let input = input.load()?;
            block_on(client::single(&daemon, &input, request_id, out.as_deref()))?
        }
        Cmd::Batch { input, count, concurrency, out_dir } => {
            let input = input.load()?;
            let all_ok = block_on(client::batch(&daemon, input, count, concurrency, out_dir.as_deref()))?;
            if !all_ok {
                bail!("some proofs did not complete");
            }
        }
        Cmd::Status => block_on(client::status(&daemon))?,
        Cmd::Cancel { job_id } => block_on(client::cancel(&daemon, &job_id))?,
        Cmd::Preload { circuit_id } => block_on(client::preload(&daemon, &circuit_id))?,
        Cmd::Metrics => block_on(client::metrics(&daemon))?,
        Cmd::Prove { c1, param_cache, miner_id, sector_id, backend, out } => {
            let be = select_backend(backend)?;
            let p = offline::prove_file(&c1, &param_cache, miner_id, sector_id, be.as_ref())?;
            println!(
                "cuzk prove: {} partition(s), backend {}, proof verified with filecoin-proofs",
                p.timings.partitions,
                be.name()
            );
            print_timings(p.srs_load, &p.timings);
            println!("  {:<14}{}", "total", secs(p.total));
            std::fs::write(&out, &p.bytes).with_context(|| format!("writing {}", out.display()))?;
            println!("proof: {} bytes -> {}", p.bytes.len(), out.display());
        }
        Cmd::Verify(args) => offline::verify(&args)?,
    }
    Ok(())
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", cuzk_proto::error_text(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use client::ProofType;
    use std::path::Path;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// `-a` before the subcommand (upstream's place) as well as after it; every proof type.
    #[test]
    fn daemon_address_before_or_after_the_subcommand() {
        let cli = Cli::try_parse_from(["cuzk-bench", "-a", "unix:/x", "batch", "-t", "wpost", "-c", "4", "-j", "2"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cli.daemon.addr, "unix:/x");
        let Cmd::Batch { input, count, concurrency, out_dir } = cli.cmd else { panic!("not batch") };
        assert_eq!((input.kind, count, concurrency), (ProofType::WindowPost, 4, 2));
        assert!(input.input.is_none() && input.c1.is_none() && out_dir.is_none());

        let cli = Cli::try_parse_from(["cuzk-bench", "batch", "-a", "unix:///y.sock", "-t", "winning", "--input", "/w.json"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cli.daemon.addr, "unix:///y.sock");
        let Cmd::Batch { input, .. } = cli.cmd else { panic!("not batch") };
        assert_eq!((input.kind, input.input.as_deref()), (ProofType::WinningPost, Some(Path::new("/w.json"))));

        for (name, kind) in [("porep", ProofType::PoRep), ("snap", ProofType::Snap), ("wpost", ProofType::WindowPost), ("winning", ProofType::WinningPost)] {
            let cli = Cli::try_parse_from(["cuzk-bench", "-a", "127.0.0.1:9820", "single", "-t", name]).unwrap_or_else(|e| panic!("{e}"));
            let Cmd::Single { input, .. } = cli.cmd else { panic!("not single") };
            assert_eq!(input.kind, kind);
        }
        let cli = Cli::try_parse_from(["cuzk-bench", "status"]).unwrap();
        assert_eq!(cli.daemon.addr, "unix:///run/cuzk/cuzk.sock");
        let cli = Cli::try_parse_from(["cuzk-bench", "-a", "h:1", "cancel", "job-1"]).unwrap();
        assert!(matches!(cli.cmd, Cmd::Cancel { ref job_id } if job_id == "job-1") && cli.daemon.addr == "h:1");
    }

    #[test]
    fn an_unknown_proof_type_is_refused_naming_the_allowed_ones() {
        let Err(e) = Cli::try_parse_from(["cuzk-bench", "-a", "unix:/x", "batch", "-t", "bogus"]) else {
            panic!("-t bogus was accepted");
        };
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        let msg = e.to_string();
        assert!(msg.contains("bogus") && msg.contains("porep, snap, wpost and winning"), "{msg}");
    }

    /// --c1 and --input each belong to their kinds; a missing --c1 or --input is named.
    #[test]
    fn inputs_that_do_not_fit_the_proof_type_are_refused() {
        let load = |args: &[&str]| {
            let mut all = vec!["cuzk-bench", "single"];
            all.extend_from_slice(args);
            let Cmd::Single { input, .. } = Cli::try_parse_from(all).unwrap().cmd else { panic!("not single") };
            input.load().map(|_| ()).map_err(|e| format!("{e:#}"))
        };
        let e = load(&["-t", "porep"]).unwrap_err();
        assert!(e.contains("needs --c1"), "{e}");
        let e = load(&["-t", "porep", "--c1", "/c1.json", "--input", "/i.json"]).unwrap_err();
        assert!(e.contains("--input is for -t snap|wpost|winning"), "{e}");
        let e = load(&["-t", "snap", "--c1", "/c1.json"]).unwrap_err();
        assert!(e.contains("--c1 is for -t porep"), "{e}");
        let e = load(&["-t", "winning"]).unwrap_err();
        assert!(e.contains("-t winning needs --input PATH"), "{e}");
        let e = load(&["-t", "wpost", "--input", "/nonexistent/window.json"]).unwrap_err();
        assert!(e.contains("/nonexistent/window.json") && e.contains("-t wpost"), "{e}");
    }
}
