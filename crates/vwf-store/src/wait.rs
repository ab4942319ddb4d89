//! Waiting for a store call from code that may block.
//!
//! The store traits are async: the server's read routes await them on its runtime, and the
//! PostgreSQL store's statements run there. The runner, the daemon's tick and the CLI are
//! blocking code (a step's command or HTTP call blocks its thread), so they wait for a call with
//! [`Wait::wait`]. The calling thread polls the call itself, so a statement costs no hop to
//! another thread and back:
//! - on a thread of a multi-threaded runtime (a blocking task's, or a worker, whose other tasks
//!   `block_in_place` hands to another worker first), on that runtime;
//! - on a thread of no runtime, on the process's runtime when one was named ([`set_home`]: the
//!   server's, for its daemon thread), else on a runtime kept for the thread (the CLI's, a test's);
//! - on a single-threaded runtime's thread, which cannot block in place, on a scoped thread of
//!   its own.
//!
//! While it waits, the thread is marked as one that may block ([`may_block`]): the file store
//! then does its I/O right there instead of on another blocking thread.

use std::cell::Cell;
use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// The process's runtime, where a thread of no runtime waits (see [`set_home`]).
static HOME: OnceLock<Handle> = OnceLock::new();

/// Names the process's runtime (the server's; the first one named stays): a thread of no runtime
/// waits for a store call on it, so a store opened on that runtime runs its calls there, polled on
/// the waiting thread, and what they spawn runs on a runtime that keeps running.
pub fn set_home(handle: Handle) {
    let _ = HOME.set(handle);
}

thread_local! {
    static MAY_BLOCK: Cell<bool> = const { Cell::new(false) };
    static LOCAL: Option<Runtime> = tokio::runtime::Builder::new_current_thread().enable_all().build().ok();
}

/// Whether the current thread is waiting in [`Wait::wait`], so blocking here holds up nothing
/// else.
pub fn may_block() -> bool {
    MAY_BLOCK.with(Cell::get)
}

/// Runs `io`, blocking I/O of a store, where blocking is allowed: right here on a thread that may
/// block (see [`may_block`]) or that no runtime drives, and in `block_in_place` on a worker of a
/// multi-threaded runtime, whose other tasks move to another worker meanwhile. Not on another
/// thread (`spawn_blocking`): `io` borrows what it writes (a run's document, an edit), which it
/// would otherwise have to copy first.
pub(crate) fn blocking<T>(io: impl FnOnce() -> T) -> T {
    if may_block() {
        return io();
    }
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(io),
        _ => io(),
    }
}

/// Marks the thread as one that may block while it lives.
struct Mark(bool);

impl Mark {
    fn set() -> Mark {
        Mark(MAY_BLOCK.with(|m| m.replace(true)))
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        MAY_BLOCK.with(|m| m.set(self.0));
    }
}

/// A store call waited for from blocking code (see the module doc).
pub trait Wait: Future + Sized + Send {
    /// Drives the call to its end on this thread and answers its output.
    fn wait(self) -> Self::Output
    where
        Self::Output: Send,
    {
        match Handle::try_current().map(|h| (h.runtime_flavor(), h)) {
            Ok((RuntimeFlavor::MultiThread, handle)) => tokio::task::block_in_place(|| {
                let _mark = Mark::set();
                handle.block_on(self)
            }),
            Ok(_) => std::thread::scope(|scope| match scope.spawn(|| on_local(self)).join() {
                Ok(answer) => answer,
                Err(panic) => std::panic::resume_unwind(panic),
            }),
            Err(_) => match HOME.get() {
                Some(home) => {
                    let _mark = Mark::set();
                    home.block_on(self)
                }
                None => on_local(self),
            },
        }
    }
}

impl<F: Future + Send> Wait for F {}

/// Drives `fut` on this thread's own runtime (a thread of no runtime).
fn on_local<F: Future>(fut: F) -> F::Output {
    let _mark = Mark::set();
    LOCAL.with(|local| match local {
        Some(runtime) => runtime.block_on(fut),
        // No runtime could be built for the thread (out of file descriptors): one for this call.
        None => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start a runtime to wait for the store: {e}"))
            .block_on(fut),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn marked() -> bool {
        may_block()
    }

    #[test]
    fn a_wait_marks_its_thread_on_every_kind_of_thread_and_unmarks_it_after() {
        assert!(!may_block());
        assert!(marked().wait(), "a thread of no runtime");
        assert!(!may_block());
        let multi = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        assert!(multi.block_on(async { tokio::spawn(async { marked().wait() }).await.unwrap() }), "a worker");
        assert!(multi.block_on(async { tokio::task::spawn_blocking(|| marked().wait()).await.unwrap() }), "a blocking thread");
        let single = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        assert!(single.block_on(async { marked().wait() }), "a single-threaded runtime's thread");
    }

    #[test]
    fn a_thread_of_no_runtime_waits_on_the_home_runtime_once_it_is_named() {
        let on_home = || std::thread::spawn(|| async { Handle::current().id() }.wait()).join().unwrap();
        // Named for the rest of the process, so it lives as long.
        let home: &'static Runtime =
            Box::leak(Box::new(tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()));
        set_home(home.handle().clone());
        assert_eq!(on_home(), home.handle().id(), "polled on the home runtime");
        assert!(std::thread::spawn(|| marked().wait()).join().unwrap(), "and marked");
    }
}
