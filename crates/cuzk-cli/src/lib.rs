//! cuzk's client, shipped beside cuzkd as the `cuzk-bench` binary (upstream cuzk's name, so
//! its command lines work unchanged): [`client`] talks to a running cuzkd (single, batch,
//! status, cancel, preload, metrics); [`offline`] proves and verifies in this process
//! (prove, verify). No test support: the lab (cuzk-lab, crate cuzk-bench) builds on this
//! crate, never the other way round.

pub mod client;
pub mod offline;
