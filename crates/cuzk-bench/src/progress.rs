//! Progress of long steps on stderr ([`cuzk_groth16::progress::Progress`]): a bar with the
//! stage, elapsed time and ETA on a terminal; plain lines in a pipe or a log (a line when a
//! stage starts, one every 10 s while it runs, one when it ends). stdout stays for results.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cuzk_groth16::progress::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a plain line reports a running stage.
const PLAIN_EVERY: Duration = Duration::from_secs(10);

struct Stage {
    name: String,
    units: u64,
    start: Instant,
    /// Plain mode: when the last line was written.
    last_line: Instant,
    bar: Option<ProgressBar>,
}

/// Progress on stderr; a terminal gets bars, anything else plain lines.
pub struct Stderr {
    terminal: bool,
    start: Instant,
    done: AtomicU64,
    stage: Mutex<Option<Stage>>,
}

impl Stderr {
    pub fn new() -> Stderr {
        Stderr::with_terminal(std::io::stderr().is_terminal())
    }

    fn with_terminal(terminal: bool) -> Stderr {
        Stderr { terminal, start: Instant::now(), done: AtomicU64::new(0), stage: Mutex::new(None) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Stage>> {
        self.stage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `[  12.3 s] ` since this display began.
    fn stamp(&self) -> String {
        format!("[{:>7.1} s]", self.start.elapsed().as_secs_f64())
    }

    /// The plain line of a running stage: done, share and ETA when its units are known.
    fn plain_line(&self, s: &Stage) -> String {
        let done = self.done.load(Ordering::Relaxed);
        let elapsed = s.start.elapsed().as_secs_f64();
        if s.units == 0 || done == 0 {
            return format!("{} {}: running, {elapsed:.0} s", self.stamp(), s.name);
        }
        let eta = elapsed * (s.units.saturating_sub(done)) as f64 / done as f64;
        format!(
            "{} {}: {done}/{} ({:.0}%), {elapsed:.0} s, ETA {eta:.0} s",
            self.stamp(),
            s.name,
            s.units,
            100.0 * done as f64 / s.units as f64
        )
    }
}

impl Progress for Stderr {
    fn stage(&self, name: &str, units: u64) {
        let mut g = self.lock();
        self.done.store(0, Ordering::Relaxed);
        let bar = self.terminal.then(|| {
            let (bar, template) = if units > 0 {
                (ProgressBar::with_draw_target(Some(units), ProgressDrawTarget::stderr()),
                 "{spinner} {msg} [{bar:30}] {percent:>3}% · {elapsed} elapsed · ETA {eta}")
            } else {
                (ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()), "{spinner} {msg} · {elapsed} elapsed")
            };
            bar.set_style(ProgressStyle::with_template(template).expect("the progress template is valid").progress_chars("=> "));
            bar.set_message(name.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let now = Instant::now();
        if !self.terminal {
            eprintln!("{} {name}: started{}", self.stamp(), if units > 0 { format!(" ({units} units)") } else { String::new() });
        }
        *g = Some(Stage { name: name.to_string(), units, start: now, last_line: now, bar });
    }

    fn advance(&self, units: u64) {
        self.done.fetch_add(units, Ordering::Relaxed);
        // Many threads advance at once: whoever finds the lock taken skips drawing.
        let Ok(mut g) = self.stage.try_lock() else { return };
        let Some(s) = g.as_mut() else { return };
        match &s.bar {
            Some(bar) => bar.set_position(self.done.load(Ordering::Relaxed)),
            None if s.last_line.elapsed() >= PLAIN_EVERY => {
                s.last_line = Instant::now();
                eprintln!("{}", self.plain_line(s));
            }
            None => {}
        }
    }

    fn finish(&self) {
        self.end("done in");
    }

    fn failed(&self) {
        self.end("failed after");
    }
}

impl Stderr {
    fn end(&self, how: &str) {
        let Some(s) = self.lock().take() else { return };
        if let Some(bar) = &s.bar {
            bar.finish_and_clear();
        }
        eprintln!("{} {}: {how} {:.1} s", self.stamp(), s.name, s.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_give_share_and_eta() {
        let p = Stderr::with_terminal(false);
        p.stage("G1 points", 200);
        p.advance(50);
        let line = p.plain_line(p.lock().as_ref().unwrap());
        assert!(line.contains("G1 points: 50/200 (25%)"), "{line}");
        assert!(line.contains("ETA"), "{line}");
        p.finish();
        assert!(p.lock().is_none());
        p.stage("sealing", 0);
        let line = p.plain_line(p.lock().as_ref().unwrap());
        assert!(line.contains("sealing: running"), "{line}");
        p.finish();
        // A failing step ends its stage too (as "failed after", not "done in").
        let r: Result<(), &str> = cuzk_groth16::progress::step(&p, "sealing", || Err("no disk"));
        assert_eq!(r, Err("no disk"));
        assert!(p.lock().is_none());
    }
}
