//! Process-wide switches for measurement: on by default, off when their environment
//! variable is `0` (read once, at first use), and settable, so that a bench can compare both
//! settings in one run.

use std::sync::atomic::{AtomicU8, Ordering};

pub struct Switch {
    var: &'static str,
    /// 0: not read from the environment yet; 1: on; 2: off.
    state: AtomicU8,
}

impl Switch {
    pub const fn new(var: &'static str) -> Switch {
        Switch { var, state: AtomicU8::new(0) }
    }

    pub fn on(&self) -> bool {
        match self.state.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let on = std::env::var(self.var).map_or(true, |v| v.trim() != "0");
                self.set(on);
                on
            }
        }
    }

    pub fn set(&self, on: bool) {
        self.state.store(if on { 1 } else { 2 }, Ordering::Relaxed);
    }

    /// The environment variable that turns it off.
    pub fn var(&self) -> &'static str {
        self.var
    }
}

/// A measurement switch from the environment read at each call (unlike [`Switch`], so that
/// a bench may set it around one call): "0" is off, anything else on, unset `default`.
pub fn knob(name: &str, default: bool) -> bool {
    std::env::var(name).map_or(default, |v| v.trim() != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_reads_its_variable_once_and_can_be_set() {
        static S: Switch = Switch::new("CUZK_TEST_SWITCH_THAT_IS_NEVER_SET");
        assert!(S.on(), "on when its variable is unset");
        S.set(false);
        assert!(!S.on());
        S.set(true);
        assert!(S.on());
        std::env::set_var("CUZK_TEST_SWITCH_READ_AS_OFF", "0");
        static T: Switch = Switch::new("CUZK_TEST_SWITCH_READ_AS_OFF");
        assert!(!T.on(), "off when its variable is 0");
        assert_eq!(T.var(), "CUZK_TEST_SWITCH_READ_AS_OFF");
    }
}
