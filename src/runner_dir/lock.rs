//! The single-runner lock of a project (in the runner directory): an exclusive `flock` held
//! for the runner's life, the holder's pid written in it, a stale lock of a dead process taken
//! over, never through a symlink.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
/// Why the runner lock of a project could not be taken.
pub enum LockError {
    /// Another runner holds it.
    #[error(
        "another sdlc-runner ({}) is running on {}; stop it first, or wait for it to finish",
        pid_text(.pid),
        .project.display()
    )]
    Held {
        /// The holder's pid as it wrote it in the lock file; `None` when unreadable.
        pid: Option<u32>,
        /// The project it runs on.
        project: PathBuf,
    },
    /// The lock file could not be opened, locked or written.
    #[error("cannot use the lock file {}: {source}; check that the runner directory is writable and the lock is not a symlink", .path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

fn pid_text(pid: &Option<u32>) -> String {
    match pid {
        Some(p) => format!("pid {p}"),
        None => "pid unknown".to_string(),
    }
}

/// Held for the runner's lifetime. The kernel drops the `flock` when the process dies, so a
/// lock file left behind by a crashed runner is simply taken over.
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
    identity: crate::runner_dir::FileIdentity,
}

impl Lock {
    /// The lock file (the tests read the holder it names).
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Err` when the lock file was removed or replaced since it was taken: another runner
    /// could then take a lock of its own, so this one must stop.
    pub fn still_held(&self) -> Result<(), String> {
        self.identity.still_at(&self.path)
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // The file is kept (deleting a flock'd file races with a runner that just opened it);
        // emptying it means no stale pid is ever reported. Closing the fd releases the lock.
        let _ = self.file.set_len(0);
    }
}

/// Takes the lock at `path` (in the runner directory) for the project `project`.
pub fn acquire_lock(path: &Path, project: &Path) -> Result<Lock, LockError> {
    let path = path.to_path_buf();
    let io_err = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(crate::safe_fs::open_flags(rustix::fs::OFlags::NOFOLLOW))
        .open(&path)
        .map_err(io_err)?;
    // Never waits: a second runner on the same project is refused at once. The lock lives as
    // long as the descriptor, so it is released however the holder ends.
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => {}
        Err(fs4::TryLockError::WouldBlock) => {
            return Err(LockError::Held {
                pid: read_holder_pid(&mut file),
                project: project.to_path_buf(),
            });
        }
        Err(fs4::TryLockError::Error(err)) => return Err(io_err(err)),
    }
    let pid = std::process::id();
    file.set_len(0).map_err(io_err)?;
    file.seek(SeekFrom::Start(0)).map_err(io_err)?;
    file.write_all(format!("{pid}\n").as_bytes())
        .map_err(io_err)?;
    crate::stats::fsynced();
    file.sync_all().map_err(io_err)?;
    let identity = crate::runner_dir::FileIdentity::of(&file).map_err(io_err)?;
    Ok(Lock {
        file,
        path,
        identity,
    })
}

/// The holder writes its pid just after locking; give it a moment if we looked in between.
fn read_holder_pid(file: &mut File) -> Option<u32> {
    for _ in 0..20 {
        let mut text = String::new();
        if file.seek(SeekFrom::Start(0)).is_ok() && file.read_to_string(&mut text).is_ok() {
            if let Ok(pid) = text.trim().parse() {
                return Some(pid);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn second_lock_is_refused_with_the_holder_pid_and_released_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let lock = acquire_lock(&d.path().join("lock"), d.path()).unwrap();
        let err = acquire_lock(&d.path().join("lock"), d.path()).unwrap_err();
        match &err {
            LockError::Held { pid, project } => {
                assert_eq!(*pid, Some(std::process::id()));
                assert_eq!(project, d.path());
            }
            other => panic!("{other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("another sdlc-runner (pid {})", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains(&d.path().display().to_string()));
        drop(lock);
        let again = acquire_lock(&d.path().join("lock"), d.path()).unwrap();
        assert_eq!(
            fs::read_to_string(again.path()).unwrap().trim(),
            std::process::id().to_string()
        );
    }

    #[test]
    fn a_symlink_at_the_lock_is_refused_and_its_target_untouched() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("precious.txt");
        fs::write(&target, "keep me").unwrap();
        std::os::unix::fs::symlink(&target, d.path().join("lock")).unwrap();
        let err = acquire_lock(&d.path().join("lock"), d.path()).unwrap_err();
        assert!(matches!(err, LockError::Io { .. }), "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep me");
    }

    #[test]
    fn a_removed_lock_file_is_noticed() {
        let d = tempfile::tempdir().unwrap();
        let lock = acquire_lock(&d.path().join("lock"), d.path()).unwrap();
        assert_eq!(lock.still_held(), Ok(()));
        fs::remove_file(d.path().join("lock")).unwrap();
        assert!(lock.still_held().unwrap_err().contains("removed"));
    }

    #[test]
    fn stale_lock_file_of_a_dead_process_is_taken_over() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("lock"), "999999999\n").unwrap();
        let lock = acquire_lock(&d.path().join("lock"), d.path()).unwrap();
        assert_eq!(
            fs::read_to_string(lock.path()).unwrap().trim(),
            std::process::id().to_string()
        );
    }

    #[test]
    fn a_lock_held_through_another_descriptor_is_refused_until_it_is_closed() {
        let d = tempfile::tempdir().unwrap();
        let lock_path = d.path().join("lock");
        // A flock belongs to an open file description, so a second open of the file contends
        // like another process would; closing it is what a dying holder's kernel does.
        let holder = File::create(&lock_path).unwrap();
        fs4::FileExt::try_lock(&holder).unwrap();
        match acquire_lock(&lock_path, d.path()) {
            // The holder wrote no pid, so it is reported as unknown rather than stale.
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, None),
            other => panic!("the held lock was taken: {other:?}"),
        }
        drop(holder);
        // A child another test forks at this moment holds a copy of the descriptor until it
        // execs: the lock is free once that copy is gone too.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let taken = loop {
            match acquire_lock(&lock_path, d.path()) {
                Ok(lock) => break Some(lock),
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(_) => break None,
            }
        };
        assert!(
            taken.is_some(),
            "the lock was not released when its holder closed it"
        );
    }
}
