//! Writing files the runner owns in places another local user might have prepared for it.
//!
//! Every open here refuses a symbolic link at the final path component (`O_NOFOLLOW`), so a
//! link planted where a log, journal or state file is expected makes the write fail instead
//! of clobbering the link's target. Files are created owner-only (0600) and directories 0700,
//! because what the runner writes can contain secrets an agent printed.
//!
//! A directory the runner writes into must be the current user's, not a symbolic link, and
//! not writable by group or others: otherwise someone else could swap or plant files in it
//! between two writes. [`check_private_dir`] and [`create_private_dir`] refuse such a
//! directory with an [`UnsafeDir`] error whose message names the path and the fix.
//!
//! Only the final component is checked: a home directory reached through a link (`~/.local`
//! pointing to another disk) is an ordinary setup, not an attack.

use rustix::fs::OFlags;
use std::ffi::OsString;
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Mode of every file the runner creates.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every directory the runner creates.
pub const DIR_MODE: u32 = 0o700;

/// Why a directory is not safe to write into.
#[derive(Debug, thiserror::Error)]
pub enum UnsafeDir {
    #[error(
        "{} is a symbolic link; the runner does not write through links: remove the link \
         (`rm {}`) or point the config at the real directory",
        path.display(),
        path.display()
    )]
    Symlink { path: PathBuf },
    #[error(
        "{} is not a directory; move it away or choose another directory",
        path.display()
    )]
    NotADirectory { path: PathBuf },
    #[error(
        "{} belongs to uid {owner}, not to this user (uid {me}); someone else could change \
         what the runner writes there: remove it (the runner recreates it) or choose another \
         directory",
        path.display()
    )]
    ForeignOwner { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{} is writable by group or others (mode {mode:o}); run `chmod 700 {}` and check \
         that nothing in it was planted by someone else",
        path.display(),
        path.display()
    )]
    Writable { path: PathBuf, mode: u32 },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl From<UnsafeDir> for io::Error {
    fn from(err: UnsafeDir) -> io::Error {
        let kind = match &err {
            UnsafeDir::Io { source, .. } => source.kind(),
            _ => io::ErrorKind::PermissionDenied,
        };
        io::Error::new(kind, err)
    }
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> UnsafeDir + '_ {
    move |source| UnsafeDir::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Refuses `path` unless it is a real directory (not a link), owned by the current user and
/// not writable by group or others.
pub fn check_private_dir(path: &Path) -> Result<(), UnsafeDir> {
    let meta = fs::symlink_metadata(path).map_err(io_at(path))?;
    check_dir_metadata(path, &meta)
}

fn check_dir_metadata(path: &Path, meta: &fs::Metadata) -> Result<(), UnsafeDir> {
    let path = path.to_path_buf();
    if meta.file_type().is_symlink() {
        return Err(UnsafeDir::Symlink { path });
    }
    if !meta.is_dir() {
        return Err(UnsafeDir::NotADirectory { path });
    }
    let me = euid();
    if meta.uid() != me {
        return Err(UnsafeDir::ForeignOwner {
            path,
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(UnsafeDir::Writable { path, mode });
    }
    Ok(())
}

/// Makes `path` a private directory: created with mode 0700 when missing (its missing
/// parents too, also 0700), then checked with [`check_private_dir`]. An existing directory
/// that passes the check but is readable by others is narrowed to 0700, since logs may hold
/// secrets; one that fails the check is refused, never repaired, because files may already
/// have been planted in it.
pub fn create_private_dir(path: &Path) -> Result<(), UnsafeDir> {
    create_missing(path)?;
    let meta = fs::symlink_metadata(path).map_err(io_at(path))?;
    check_dir_metadata(path, &meta)?;
    if meta.mode() & 0o777 != DIR_MODE {
        fs::set_permissions(path, Permissions::from_mode(DIR_MODE)).map_err(io_at(path))?;
    }
    Ok(())
}

/// Creates `path` and its missing ancestors one component at a time, each 0700. `mkdir`
/// never follows a link at the component it creates: an existing link is left for the
/// caller's check to refuse.
fn create_missing(path: &Path) -> Result<(), UnsafeDir> {
    match fs::symlink_metadata(path) {
        Ok(_) => return Ok(()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(io_at(path)(err)),
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_missing(parent)?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => Ok(()),
        // Created concurrently (another runner, or a planted link): the check decides.
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(io_at(path)(err)),
    }
}

/// How a file is opened by [`open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Append, creating the file when missing.
    Append,
    /// Create; fail with `AlreadyExists` when anything (even a dangling link) has the name.
    CreateNew,
    /// Write from scratch: truncate an existing file, create a missing one. Readable too, so
    /// a writer can move content within the file (a log cutting itself back).
    Truncate,
}

/// Opens `path` for writing without following a symbolic link at its final component; a new
/// file gets mode 0600, and an existing one is narrowed to 0600 (an older file may have been
/// created looser). Only regular files are accepted: a FIFO or device planted under the name
/// is refused rather than written to (a FIFO could block the runner forever). Errors name the
/// path; a link is reported as such with the fix.
pub fn open(path: &Path, mode: Mode) -> io::Result<File> {
    let mut options = OpenOptions::new();
    // O_NONBLOCK only matters for a FIFO, which is refused just below; it keeps the open itself
    // from hanging on one that has no reader.
    options.mode(FILE_MODE).custom_flags(open_flags(
        OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
    ));
    match mode {
        Mode::Append => options.append(true).create(true),
        Mode::CreateNew => options.write(true).create_new(true),
        Mode::Truncate => options.read(true).write(true).create(true).truncate(true),
    };
    let file = options.open(path).map_err(|err| describe(err, path))?;
    let meta = file.metadata().map_err(|err| describe(err, path))?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file; the runner writes only its own files: remove it",
                path.display()
            ),
        ));
    }
    clear_nonblock(&file).map_err(|err| describe(err, path))?;
    if meta.mode() & 0o777 != FILE_MODE {
        file.set_permissions(Permissions::from_mode(FILE_MODE))
            .map_err(|err| describe(err, path))?;
    }
    Ok(file)
}

fn clear_nonblock(file: &File) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(file)?;
    rustix::fs::fcntl_setfl(file, flags - OFlags::NONBLOCK)?;
    Ok(())
}

/// `flags` as [`std::os::unix::fs::OpenOptionsExt::custom_flags`] takes them.
pub(crate) fn open_flags(flags: OFlags) -> i32 {
    // The C `int` of open(2), whose bits rustix keeps unsigned.
    i32::from_ne_bytes(flags.bits().to_ne_bytes())
}

/// Adds the path to an error, and turns the bare `ELOOP` of a refused link into advice.
fn describe(err: io::Error, path: &Path) -> io::Error {
    if err.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        return io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is a symbolic link; the runner does not write through links: remove it \
                 (`rm {}`)",
                path.display(),
                path.display()
            ),
        );
    }
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

/// Reads a whole file, refusing a symbolic link at its final component.
pub fn read_no_follow(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(open_flags(OFlags::NOFOLLOW | OFlags::CLOEXEC))
        .open(path)
        .map_err(|err| {
            if err.kind() == io::ErrorKind::NotFound {
                err
            } else {
                describe(err, path)
            }
        })?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Replaces `path` with `bytes` so that a crash at any moment leaves either the old or the
/// new content: a temp file `.<name>.<unique>.tmp` in the same directory (created
/// exclusively, never through a link), fsync'd, renamed over `path`, then the directory
/// fsync'd so the rename is durable. A link at `path` is replaced, not followed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_via_temp(path, bytes, true, true)
}

/// Like [`write_atomic`] (old or new content, never a mix, never through a link) but without
/// the two fsyncs: for a file that only mirrors what a durable record already holds, where
/// after a power loss an older copy is harmless.
pub fn replace_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_via_temp(path, bytes, true, false)
}

/// Like [`write_atomic`], but `path` must not exist (anything there, a link included, is
/// `AlreadyExists`): the complete file appears under its name at once or not at all.
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_via_temp(path, bytes, false, true)
}

fn write_via_temp(path: &Path, bytes: &[u8], replace: bool, durable: bool) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file path", path.display()),
        )
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut temp_name = OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = dir.join(temp_name);
    let result = (|| {
        let mut file = open(&temp, Mode::CreateNew)?;
        file.write_all(bytes).map_err(|err| describe(err, &temp))?;
        if durable {
            crate::stats::fsynced();
            file.sync_all().map_err(|err| describe(err, &temp))?;
        }
        drop(file);
        if replace {
            fs::rename(&temp, path).map_err(|err| describe(err, path))?;
        } else {
            // link(2) never replaces an existing name, which rename(2) would.
            fs::hard_link(&temp, path).map_err(|err| describe(err, path))?;
            fs::remove_file(&temp).map_err(|err| describe(err, &temp))?;
        }
        if !durable {
            return Ok(());
        }
        crate::stats::fsynced();
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|err| describe(err, dir))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use tempfile::TempDir;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o777
    }

    /// A directory with a file outside it that links inside will point at.
    fn setup() -> (TempDir, PathBuf, PathBuf) {
        let root = TempDir::new().unwrap();
        let outside = root.path().join("outside.txt");
        fs::write(&outside, "precious\n").unwrap();
        let dir = root.path().join("dir");
        fs::create_dir(&dir).unwrap();
        (root, dir, outside)
    }

    #[test]
    fn open_creates_private_files_in_every_mode() {
        let (_root, dir, _) = setup();
        for (i, m) in [Mode::Append, Mode::CreateNew, Mode::Truncate]
            .into_iter()
            .enumerate()
        {
            let path = dir.join(format!("f{i}"));
            let mut file = open(&path, m).unwrap();
            file.write_all(b"x").unwrap();
            assert_eq!(mode(&path), 0o600, "{m:?}");
        }
    }

    #[test]
    fn open_appends_truncates_and_refuses_to_recreate() {
        let (_root, dir, _) = setup();
        let path = dir.join("log");
        open(&path, Mode::Append)
            .unwrap()
            .write_all(b"a\n")
            .unwrap();
        open(&path, Mode::Append)
            .unwrap()
            .write_all(b"b\n")
            .unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "a\nb\n");
        let err = open(&path, Mode::CreateNew).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
        open(&path, Mode::Truncate)
            .unwrap()
            .write_all(b"c\n")
            .unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "c\n");
        assert_eq!(mode(&path), 0o600, "an older, looser file is narrowed");
    }

    #[test]
    fn open_never_writes_through_a_symlink() {
        let (_root, dir, outside) = setup();
        let before = mode(&outside);
        for m in [Mode::Append, Mode::CreateNew, Mode::Truncate] {
            let link = dir.join(format!("{m:?}.log"));
            symlink(&outside, &link).unwrap();
            let err = open(&link, m).unwrap_err();
            if m != Mode::CreateNew {
                let text = err.to_string();
                assert!(text.contains("symbolic link"), "{text}");
                assert!(text.contains(&link.display().to_string()), "{text}");
            }
            assert_eq!(fs::read_to_string(&outside).unwrap(), "precious\n", "{m:?}");
            assert_eq!(mode(&outside), before, "target mode untouched");
        }
        // A dangling link is not created through either.
        let dangling_target = dir.join("never-created");
        let link = dir.join("dangling.log");
        symlink(&dangling_target, &link).unwrap();
        for m in [Mode::Append, Mode::CreateNew, Mode::Truncate] {
            assert!(open(&link, m).is_err());
        }
        assert!(!dangling_target.exists());
    }

    #[test]
    fn open_refuses_a_fifo_without_blocking() {
        let (_root, dir, _) = setup();
        let fifo = dir.join("fifo.log");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // With no reader the open itself fails (ENXIO); either way nothing blocks.
        for m in [Mode::Append, Mode::Truncate] {
            let err = open(&fifo, m).unwrap_err();
            assert!(err.to_string().contains("fifo.log"), "{err}");
        }
        // With a reader present the open succeeds at the syscall and is refused afterwards.
        let _reader = OpenOptions::new()
            .read(true)
            .custom_flags(open_flags(OFlags::NONBLOCK))
            .open(&fifo)
            .unwrap();
        let err = open(&fifo, Mode::Append).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[test]
    fn write_new_never_replaces_anything() {
        let (_dir, base, _) = setup();
        let path = base.join("new.txt");
        write_new(&path, b"one").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        assert_eq!(mode(&path), FILE_MODE);
        let err = write_new(&path, b"two").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"one");
        assert_eq!(fs::read_dir(&base).unwrap().count(), 1, "no temp file left");
    }

    #[test]
    fn write_atomic_replaces_content_and_leaves_no_temp_file() {
        let (_root, dir, _) = setup();
        let path = dir.join("state.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(mode(&path), 0o600);
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("state.json")]);
    }

    #[test]
    fn write_atomic_replaces_a_symlink_instead_of_following_it() {
        let (_root, dir, outside) = setup();
        let path = dir.join("state.json");
        symlink(&outside, &path).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(fs::read_to_string(&outside).unwrap(), "precious\n");
        assert!(!fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
    }

    #[test]
    fn write_atomic_reports_a_missing_directory_and_cleans_up() {
        let (_root, dir, _) = setup();
        let err = write_atomic(&dir.join("missing/state.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[test]
    fn create_private_dir_makes_missing_parents_0700() {
        let (_root, dir, _) = setup();
        let deep = dir.join("a/b/c");
        create_private_dir(&deep).unwrap();
        for p in [dir.join("a"), dir.join("a/b"), deep.clone()] {
            assert_eq!(mode(&p), 0o700, "{}", p.display());
        }
        // Idempotent, and an existing 0755 directory of ours is narrowed.
        fs::set_permissions(&deep, Permissions::from_mode(0o755)).unwrap();
        create_private_dir(&deep).unwrap();
        assert_eq!(mode(&deep), 0o700);
    }

    #[test]
    fn create_private_dir_refuses_a_symlink_and_leaves_its_target_alone() {
        let (root, dir, _) = setup();
        let target = root.path().join("elsewhere");
        fs::create_dir(&target).unwrap();
        fs::set_permissions(&target, Permissions::from_mode(0o755)).unwrap();
        let link = dir.join("logs");
        symlink(&target, &link).unwrap();
        let err = create_private_dir(&link).unwrap_err();
        assert!(matches!(err, UnsafeDir::Symlink { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains(&link.display().to_string()), "{text}");
        assert!(text.contains("remove the link"), "{text}");
        assert_eq!(mode(&target), 0o755, "the link's target is not chmod'ed");

        // A dangling link is not created through.
        let dangling = dir.join("dangling");
        symlink(root.path().join("nowhere"), &dangling).unwrap();
        assert!(matches!(
            create_private_dir(&dangling),
            Err(UnsafeDir::Symlink { .. })
        ));
        assert!(!root.path().join("nowhere").exists());
    }

    #[test]
    fn a_group_or_world_writable_dir_is_refused_with_the_chmod_fix() {
        let (_root, dir, _) = setup();
        for m in [0o777, 0o770, 0o702, 0o1777] {
            fs::set_permissions(&dir, Permissions::from_mode(m)).unwrap();
            let err = create_private_dir(&dir).unwrap_err();
            assert!(matches!(err, UnsafeDir::Writable { .. }), "{m:o}: {err}");
            assert!(
                err.to_string()
                    .contains(&format!("chmod 700 {}", dir.display())),
                "{err}"
            );
            assert_eq!(
                fs::symlink_metadata(&dir).unwrap().mode() & 0o7777,
                m,
                "refused, not repaired"
            );
            assert!(check_private_dir(&dir).is_err());
        }
    }

    #[test]
    fn a_file_where_the_dir_should_be_is_refused() {
        let (_root, dir, _) = setup();
        let file = dir.join("logs");
        fs::write(&file, "").unwrap();
        let err = create_private_dir(&file).unwrap_err();
        assert!(matches!(err, UnsafeDir::NotADirectory { .. }), "{err}");
        let io: io::Error = err.into();
        assert_eq!(io.kind(), io::ErrorKind::PermissionDenied);
        assert!(io.to_string().contains("not a directory"));
    }

    #[test]
    fn a_dir_of_another_user_is_refused() {
        let (_root, dir, _) = setup();
        // As root the test can hand a directory to someone else; otherwise `/` is root's.
        let (foreign, owner) = if euid() == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
            (dir.clone(), 65534)
        } else {
            (PathBuf::from("/"), 0)
        };
        let err = check_private_dir(&foreign).unwrap_err();
        assert!(
            matches!(err, UnsafeDir::ForeignOwner { owner: o, .. } if o == owner),
            "{err}"
        );
        assert!(
            err.to_string().contains(&format!("belongs to uid {owner}")),
            "{err}"
        );
    }
}
