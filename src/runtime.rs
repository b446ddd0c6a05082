//! The one way the runner builds a tokio runtime, so every async part (the driver, a fleet,
//! the status server, the demo's wait) runs with the same drivers enabled.

use tokio::runtime::{Builder, Runtime};

/// A runtime with timers and I/O enabled: on the calling thread when `worker_threads` is
/// `None` (one lifecycle, the status server's own thread), else on that many workers (a
/// fleet, whose lifecycles run side by side).
pub fn build(worker_threads: Option<usize>) -> std::io::Result<Runtime> {
    let mut builder = match worker_threads {
        None => Builder::new_current_thread(),
        Some(n) => {
            let mut b = Builder::new_multi_thread();
            b.worker_threads(n.max(1));
            b
        }
    };
    builder.enable_all().build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_flavours_run_timers() {
        for threads in [None, Some(2)] {
            let rt = build(threads).expect("runtime");
            let flavor = rt.handle().runtime_flavor();
            rt.block_on(async { tokio::time::sleep(std::time::Duration::from_millis(1)).await });
            assert_eq!(
                flavor == tokio::runtime::RuntimeFlavor::CurrentThread,
                threads.is_none()
            );
        }
    }
}
