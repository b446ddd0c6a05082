//! The sandbox's entry under `network: "allowlist"` (`sdlc-runner egress-relay`, hidden):
//! inside the sandbox's own network namespace it listens on `127.0.0.1:<port>`, relays each
//! connection, byte for byte, to the proxy's Unix socket bound in, and starts the agent in its
//! place (its stdin, stdout and stderr), exiting as the agent did. It decides nothing: the
//! proxy outside does.

use std::io;
use std::path::{Path, PathBuf};
use tokio::net::{TcpListener, UnixStream};

/// Relays every connection `listener` accepts to `socket`, until dropped.
pub async fn relay(listener: TcpListener, socket: PathBuf) {
    loop {
        let (mut tcp, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::debug!(error = %e, "egress relay: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let socket = socket.clone();
        tokio::spawn(async move {
            match UnixStream::connect(&socket).await {
                Ok(mut proxy) => {
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut proxy).await;
                }
                Err(e) => eprintln!(
                    "sdlc-runner egress-relay: the runner's proxy at {} does not answer: {e}",
                    socket.display()
                ),
            }
        });
    }
}

/// `egress-relay`: listens on `127.0.0.1:port`, relays to `socket`, runs `program` with
/// `args` and returns its exit code (128 + the signal that ended it; 127 when it cannot
/// start, 1 when the port cannot be had).
pub fn entry(socket: &Path, port: u16, program: &Path, args: &[String]) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sdlc-runner egress-relay: no runtime: {e}");
            return 1;
        }
    };
    runtime.block_on(async {
        let listener = match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("sdlc-runner egress-relay: cannot listen on 127.0.0.1:{port}: {e}");
                return 1;
            }
        };
        let relaying = tokio::spawn(relay(listener, socket.to_path_buf()));
        let mut agent = crate::process::ChildSpec::new(program);
        agent.args(args);
        let status = crate::process::entry::run_in_place(agent).await;
        relaying.abort();
        exit_code(program, status)
    })
}

fn exit_code(program: &Path, status: io::Result<std::process::ExitStatus>) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => s.code().or(s.signal().map(|n| 128 + n)).unwrap_or(1),
        Err(e) => {
            eprintln!(
                "sdlc-runner egress-relay: cannot start {}: {e}",
                program.display()
            );
            127
        }
    }
}
