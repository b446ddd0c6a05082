//! The open journal file: sessions begun and ended, batches appended with one write and one
//! fsync, its identity checked before each write.

use super::{
    parse, read_contents, recover, JournalError, Line, Record, Recovered, SessionEnd, FORMAT,
};
use crate::machine::{Effect, Event, Limits, Mode, Report, State};
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The open journal file, ready to append.
pub struct Journal {
    path: PathBuf,
    file: File,
    identity: crate::runner_dir::FileIdentity,
    /// Bytes known to be valid: a failed append is cut back to here.
    len: u64,
    next_seq: u64,
    session: Option<String>,
    /// The last session in the file, for acknowledging its halt.
    last_session: Option<String>,
    sessions: BTreeSet<String>,
}

impl Journal {
    /// Opens (creates, mode 0600) the journal, reads it and tells what it holds. A torn last
    /// line is cut away and reported.
    pub fn open(path: &Path) -> Result<(Journal, Recovered), JournalError> {
        let io_err = |action: &'static str| {
            let path = path.to_path_buf();
            move |source| JournalError::Io {
                path,
                action,
                source,
            }
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir {
            fs::create_dir_all(dir).map_err(io_err("cannot create the journal's directory"))?;
        }
        let existed = fs::symlink_metadata(path).is_ok();
        // Never through a symlink: another user could point it at any file we can write.
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(crate::safe_fs::open_flags(rustix::fs::OFlags::NOFOLLOW))
            .open(path)
            .map_err(io_err(
                "cannot open the journal (a symlink there is refused)",
            ))?;
        // The journal records failures and agent output: nobody else needs to read it.
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(io_err("cannot make the journal private (chmod 0600)"))?;
        if !existed {
            if let Some(dir) = dir {
                // The new file's directory entry must survive a crash too.
                crate::stats::fsynced();
                File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(io_err("cannot fsync the journal's directory"))?;
            }
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(io_err("cannot read the journal"))?;
        let contents = parse(&bytes, path)?;
        let mut rec = recover(&contents.lines, path)?;
        rec.torn_line = contents.torn_line.clone();
        if contents.valid_len < bytes.len() as u64 {
            crate::stats::fsynced();
            file.set_len(contents.valid_len)
                .and_then(|()| file.sync_data())
                .map_err(io_err("cannot cut the torn last line off the journal"))?;
        }
        let identity = crate::runner_dir::FileIdentity::of(&file)
            .map_err(io_err("cannot inspect the journal"))?;
        let journal = Journal {
            path: path.to_path_buf(),
            file,
            identity,
            len: contents.valid_len,
            next_seq: contents.lines.last().map_or(1, |l| l.seq + 1),
            session: None,
            last_session: contents.lines.last().map(|l| l.session.clone()),
            sessions: contents.lines.iter().map(|l| l.session.clone()).collect(),
        };
        Ok((journal, rec))
    }

    /// Reads what the journal holds without modifying it (a torn line stays on disk).
    pub fn read(path: &Path) -> Result<Recovered, JournalError> {
        let contents = read_contents(path)?;
        let mut rec = recover(&contents.lines, path)?;
        rec.torn_line = contents.torn_line;
        Ok(rec)
    }

    /// Starts a new session and returns its id (UTC time + pid, unique in the file).
    pub fn begin(&mut self, limits: &Limits, mode: Mode) -> Result<String, JournalError> {
        let pid = std::process::id();
        let base = format!("{}-{pid}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"));
        let mut id = base.clone();
        let mut n = 1;
        while self.sessions.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        self.session = Some(id.clone());
        self.sessions.insert(id.clone());
        self.append(&[Record::SessionStart {
            limits: Box::new(limits.clone()),
            mode,
            pid,
            version: env!("CARGO_PKG_VERSION").to_string(),
        }])?;
        Ok(id)
    }

    /// Continues a session recovered from the file (after a crash or a signal).
    pub fn continue_session(&mut self, session: &str) {
        self.session = Some(session.to_string());
        self.sessions.insert(session.to_string());
    }

    /// The session being appended to.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Appends the records as one write and fsyncs once before returning. On failure the file
    /// is cut back so that it never keeps half a batch in the middle.
    pub fn append(&mut self, records: &[Record]) -> Result<(), JournalError> {
        self.append_with(records, true)
    }

    /// Fsyncs what was appended so far on a thread of its own, through a second handle on
    /// the file: the agent's reader appends its running cost unsynced and must not wait on
    /// the disk while the agent goes on spending. The handle answers the fsync's result.
    pub fn sync_in_background(&self) -> io::Result<std::thread::JoinHandle<io::Result<()>>> {
        let file = self.file.try_clone()?;
        std::thread::Builder::new()
            .name("journal fsync".into())
            .spawn(move || fsync(&file))
    }

    /// [`Journal::append`] without the fsync, for a record that only matters while the
    /// machine stays up: the agent's process group, which a successor kills after a crash of
    /// the runner. A power loss ends the agent too, so the record need not survive one; the
    /// kernel has it as soon as the write returns.
    pub fn append_unsynced(&mut self, records: &[Record]) -> Result<(), JournalError> {
        self.append_with(records, false)
    }

    fn append_with(&mut self, records: &[Record], durable: bool) -> Result<(), JournalError> {
        let Some(session) = self.session.clone() else {
            return Err(JournalError::NoSession {
                path: self.path.clone(),
            });
        };
        self.check_intact()?;
        let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut buf = Vec::with_capacity(256 * records.len());
        let mut seq = self.next_seq;
        for record in records {
            let line = Line {
                v: FORMAT,
                seq,
                time: time.clone(),
                session: session.clone(),
                record: record.clone(),
            };
            serde_json::to_writer(&mut buf, &line).map_err(|e| JournalError::Io {
                path: self.path.clone(),
                action: "cannot encode a journal record",
                source: io::Error::other(e),
            })?;
            buf.push(b'\n');
            seq += 1;
        }
        crate::failpoint::point("journal: before append");
        let written =
            self.file.write_all(&buf).and_then(
                |()| {
                    if durable {
                        fsync(&self.file)
                    } else {
                        Ok(())
                    }
                },
            );
        crate::failpoint::point("journal: after append");
        if let Err(source) = written {
            let _ = self.file.set_len(self.len);
            return Err(JournalError::Io {
                path: self.path.clone(),
                action: "cannot append to the journal",
                source,
            });
        }
        self.len += buf.len() as u64;
        self.next_seq = seq;
        self.last_session = Some(session);
        Ok(())
    }

    /// `Err` when the journal's path no longer names the file this runner appends to.
    pub fn check_intact(&self) -> Result<(), JournalError> {
        self.identity
            .still_at(&self.path)
            .map_err(|what| JournalError::Vanished { what })
    }

    /// Everything appended so far, read back through the open descriptor (which still reaches
    /// the data after the path was removed).
    pub fn contents(&self) -> io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0u8; self.len as usize];
        self.file.read_exact_at(&mut bytes, 0)?;
        Ok(bytes)
    }

    /// The event with the state it led to and what it reported (the failure context of a
    /// `StepFailed`, what was said), then one record per effect, in one fsync.
    pub fn record_step(
        &mut self,
        event: &Event,
        report: &Report,
        effects: &[Effect],
        state_after: &State,
    ) -> Result<(), JournalError> {
        let state = state_after.name().to_string();
        let mut records = Vec::with_capacity(2 + effects.len());
        records.push(Record::Event {
            event: event.clone(),
            state: state.clone(),
            said: report.said.clone(),
        });
        if let Some(detail) = &report.failure {
            records.push(Record::Failure {
                detail: detail.clone(),
            });
        }
        records.extend(effects.iter().map(|effect| Record::Effect {
            effect: *effect,
            state: state.clone(),
        }));
        self.append(&records)
    }

    /// Ends the session. `HaltAcknowledged` may be written without an open session: it then
    /// belongs to the last session in the file (the halted one). Anything else needs a session.
    pub fn end(&mut self, end: SessionEnd) -> Result<(), JournalError> {
        if self.session.is_none() && end == SessionEnd::HaltAcknowledged {
            self.session = self.last_session.clone();
        }
        let result = self.append(&[Record::SessionEnd { end }]);
        self.session = None;
        result
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The one fsync of the journal's data, counted (and slowed for the tests that ask).
fn fsync(file: &File) -> io::Result<()> {
    crate::stats::fsynced();
    crate::failpoint::before_fsync();
    file.sync_data()
}
