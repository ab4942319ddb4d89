//! Time as a dependency: the runner asks a `Clock` for `now` and to wait for a timer, so tests
//! (and `VWF_NOW`) can pin time instead of sleeping.

use std::sync::Mutex;

use chrono::Utc;
use vwf_core::time::Ts;

pub trait Clock: Send + Sync {
    fn now(&self) -> Ts;
    /// Blocks until `t` (a fixed clock simply moves to `t`).
    fn sleep_until(&self, t: Ts);
}

/// A clock moved so that it reads a given `now` at the moment it is made, then runs on with
/// `base`: a tick of the daemon or the scheduler runs at the time it was asked to, and its runs
/// see that time.
pub struct Shifted<'c> {
    base: &'c dyn Clock,
    offset: chrono::TimeDelta,
}

impl<'c> Shifted<'c> {
    pub fn to(base: &'c dyn Clock, now: Ts) -> Self {
        Shifted { base, offset: now - base.now() }
    }
}

impl Clock for Shifted<'_> {
    fn now(&self) -> Ts {
        self.base.now() + self.offset
    }
    fn sleep_until(&self, t: Ts) {
        self.base.sleep_until(t - self.offset);
    }
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Ts {
        Utc::now()
    }
    fn sleep_until(&self, t: Ts) {
        loop {
            let left = t - Utc::now();
            match left.to_std() {
                Ok(d) if !d.is_zero() => std::thread::sleep(d.min(std::time::Duration::from_secs(1))),
                _ => return,
            }
        }
    }
}

/// A clock that stands still until told to move: `VWF_NOW=2026-11-29T09:00:00Z` pins it.
pub struct FixedClock(Mutex<Ts>);

impl FixedClock {
    pub fn new(t: Ts) -> Self {
        FixedClock(Mutex::new(t))
    }
}

impl Clock for FixedClock {
    fn now(&self) -> Ts {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn sleep_until(&self, t: Ts) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if t > *now {
            *now = t;
        }
    }
}

/// The clock for this process: `VWF_NOW` (RFC 3339) pins it, else the system clock.
pub fn from_env() -> Result<Box<dyn Clock>, String> {
    match std::env::var("VWF_NOW") {
        Ok(s) if !s.is_empty() => vwf_core::time::parse(&s)
            .map(|t| Box::new(FixedClock::new(t)) as Box<dyn Clock>)
            .ok_or_else(|| format!("VWF_NOW={s:?} is not an RFC 3339 time")),
        _ => Ok(Box::new(SystemClock)),
    }
}
