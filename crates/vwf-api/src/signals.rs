//! SIGINT and SIGTERM for the long-running commands, `vwf serve` and `vwf daemon`: one mechanism
//! (tokio's signal handling) for both. The server awaits [`StopSignals::recv`] for its graceful
//! shutdown; the foreground daemon, which is a plain thread loop, watches the flag of
//! [`stop_flag`], set by a small runtime thread that awaits the same signals.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGINT and SIGTERM, registered with the current runtime as soon as this exists (so a stop
/// asked for right after a process says it is ready is a clean stop).
pub struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    /// Must be called inside a tokio runtime (with its IO driver enabled).
    pub fn install() -> std::io::Result<StopSignals> {
        Ok(StopSignals { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    /// Resolves at the first SIGINT or SIGTERM.
    pub async fn recv(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// A flag set at the first SIGINT or SIGTERM, for a loop that is not async (the foreground
/// daemon). The signals are registered before this returns.
pub fn stop_flag() -> std::io::Result<Arc<AtomicBool>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let signals = {
        let _entered = runtime.enter();
        StopSignals::install()?
    };
    let flag = Arc::new(AtomicBool::new(false));
    let set = flag.clone();
    std::thread::Builder::new().name("vwf-signals".into()).spawn(move || {
        runtime.block_on(signals.recv());
        set.store(true, Ordering::SeqCst);
    })?;
    Ok(flag)
}
