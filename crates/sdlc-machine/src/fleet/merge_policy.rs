//! The two pure policies every runner follows around a merge, fleet or not: the wait for the
//! merge lease and the re-merge after a lost push race.

/// How long a runner waits for the merge lease (the fleet's turn or the tracker's lease)
/// before it gives up: pauses of `FIRST_MS` doubling to `MAX_MS`, until `limit_ms` have
/// passed. The limit is the lease's own length: by then a holder that died has lost its lease
/// and the waiter takes it over, so a longer wait is never needed. Pure: the machine keeps one
/// per wait for the merge turn and asks the driver for each pause (`Effect::Pause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LeaseWait {
    limit_ms: u64,
    waited_ms: u64,
    next_ms: u64,
}

impl LeaseWait {
    /// The first pause, in milliseconds.
    pub const FIRST_MS: u64 = 200;
    /// The longest pause, in milliseconds.
    pub const MAX_MS: u64 = 2_000;

    /// A wait that gives up after `limit_ms` milliseconds of pauses.
    pub fn new(limit_ms: u64) -> LeaseWait {
        LeaseWait {
            limit_ms,
            waited_ms: 0,
            next_ms: Self::FIRST_MS,
        }
    }

    /// The lease is busy: how long to pause before asking again, or `None` when the wait is
    /// over its limit (the merge then fails as the environment's, naming the holder).
    pub fn busy(&mut self) -> Option<u64> {
        if self.waited_ms >= self.limit_ms {
            return None;
        }
        let pause = self.next_ms.min(self.limit_ms - self.waited_ms).max(1);
        self.waited_ms += pause;
        self.next_ms = (self.next_ms * 2).min(Self::MAX_MS);
        Some(pause)
    }

    /// The pauses handed out so far, in milliseconds.
    pub fn waited_ms(&self) -> u64 {
        self.waited_ms
    }

    /// The most pauses a wait of `limit_ms` can make.
    pub fn max_pauses(limit_ms: u64) -> u64 {
        // The doubling pauses below MAX_MS, then MAX_MS each, and one shortened last pause.
        let mut ramp = 0;
        let mut sum = 0;
        let mut p = Self::FIRST_MS;
        while p < Self::MAX_MS && sum < limit_ms {
            sum += p;
            ramp += 1;
            p *= 2;
        }
        ramp + limit_ms.saturating_sub(sum).div_ceil(Self::MAX_MS)
    }
}

/// A merge that lost a push race (main on origin moved while it merged, and the branch is not
/// in it) is contention on main, not a failure of the issue: main is refreshed, the branch
/// brought up to date and the merge done again, without spending an attempt, up to
/// [`Contention::MAX_LOST_RACES`] times per attempt. Past that the lost race is the attempt's
/// failure like any other, so the machine's retry limit and bounds still hold. The machine keeps
/// one per merge attempt.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Contention {
    lost: u32,
}

/// What to do after a lost race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterLostRace {
    /// Refresh main and merge again, after this pause in milliseconds.
    Retry {
        /// How long to pause first.
        pause_ms: u64,
    },
    /// Report the attempt as failed.
    GiveUp,
}

impl Contention {
    /// Lost races per attempt that are merged again for free.
    pub const MAX_LOST_RACES: u32 = 3;

    /// Records a lost race: merge again after a pause growing by 250 ms per race, or give up
    /// past [`Contention::MAX_LOST_RACES`].
    pub fn lost_race(&mut self) -> AfterLostRace {
        if self.lost >= Self::MAX_LOST_RACES {
            return AfterLostRace::GiveUp;
        }
        self.lost += 1;
        AfterLostRace::Retry {
            pause_ms: 250 * u64::from(self.lost),
        }
    }

    /// The races lost so far in this attempt.
    pub fn lost(&self) -> u32 {
        self.lost
    }
}
