//! GitHub's rate limit is the machine's wait: a call refused by it is made again after the
//! limit lifts, whatever request it answered (a probe, a step's builtin call, a look at CI,
//! the merge turn), and it never spends an attempt, never escalates an issue and never blames
//! one; only `maxNetworkWaits` refusals in a row on one request halt, as the network's would.

use crate::common;

use common::{drive, Reply, Trace};
use proptest::prelude::*;
use sdlc_machine::failure::FailureClass;
use sdlc_machine::machine::{Core, Effect, Event, HaltReason, Limits, Mode, Notice, WaitReason};
use sdlc_machine::step::Step;
use std::collections::VecDeque;

/// A step's replies: an outcome, with rate-limit refusals (`Some(wait)`) before it.
type Script = Vec<Vec<(Option<u64>, Reply)>>;

fn run(limits: &Limits, script: &Script, with_limits: bool) -> Trace {
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    let mut qs: Vec<VecDeque<Reply>> = script
        .iter()
        .map(|q| {
            q.iter()
                .flat_map(|(limit, reply)| {
                    let limited = limit.filter(|_| with_limits).map(|wait| {
                        std::iter::repeat_n(Reply::RateLimited(wait), 1 + (wait % 3) as usize)
                    });
                    limited.into_iter().flatten().chain(std::iter::once(*reply))
                })
                .collect()
        })
        .collect();
    drive(&mut core, 2, 100_000, |step, running| {
        let q = &mut qs[step.index()];
        match q.front().copied() {
            Some(r @ Reply::RateLimited(_)) => {
                q.pop_front();
                r
            }
            Some(r) if running => {
                q.pop_front();
                r
            }
            _ => Reply::Ok,
        }
    })
}

fn reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        4 => Just(Reply::Ok),
        1 => Just(Reply::Fail(FailureClass::TestAssertion, 1)),
        1 => Just(Reply::Fail(FailureClass::Lint, 2)),
    ]
}

fn script() -> impl Strategy<Value = Script> {
    let entry = (proptest::option::of(0u64..100_000), reply());
    proptest::collection::vec(proptest::collection::vec(entry, 0..6), Step::COUNT)
}

fn escalations(t: &Trace) -> usize {
    t.effects
        .iter()
        .filter(|e| matches!(e, Effect::MarkEscalated { .. }))
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The same session with and without rate-limit refusals (at most three in a row):
    /// the same attempts of the same steps, the same escalations, the same end; every wait
    /// after a refusal is the limit's (plus a second), never longer than the cap.
    #[test]
    fn a_rate_limit_never_spends_an_attempt_or_blames_an_issue(script in script()) {
        let limits = Limits::default();
        let plain = run(&limits, &script, false);
        let limited = run(&limits, &script, true);
        prop_assert_eq!(plain.runs().collect::<Vec<_>>(), limited.runs().collect::<Vec<_>>());
        prop_assert_eq!(escalations(&plain), escalations(&limited));
        prop_assert_eq!(plain.exit, limited.exit);
        prop_assert_eq!(plain.invocations, limited.invocations);
        let asked: Vec<u64> = limited.events.iter().filter_map(|e| match e {
            Event::RateLimited { wait_secs } => Some(Limits::rate_limit_wait_secs(*wait_secs)),
            _ => None,
        }).collect();
        let waited: Vec<u64> = limited.effects.windows(2).filter_map(|w| match w {
            // The wait says it is the API's rate limit.
            [Effect::Notify(Notice::RateLimitWait { seconds, .. }), Effect::Wait { seconds: s, reason: Some(WaitReason::RateLimit) }] => {
                Some(*seconds.min(s))
            }
            _ => None,
        }).collect();
        prop_assert_eq!(&asked, &waited);
        prop_assert!(waited.iter().all(|w| *w <= Limits::MAX_RATE_LIMIT_WAIT_SECS));
    }

    /// A limit that never lifts halts the session once the waits in a row reach
    /// `maxNetworkWaits`, each at most the cap: no escalation, no attempt; the halt is the
    /// rate limit's, with the time it still lasts.
    #[test]
    fn a_limit_that_never_lifts_halts_without_blaming_anyone(wait in 0u64..1_000_000, at in 0usize..Step::COUNT) {
        let limits = Limits::default();
        let mut core = Core::new(limits.clone(), Mode::Continuous);
        let mut waits = Vec::new();
        let trace = drive(&mut core, 1, 10_000, |step, _| {
            if step.index() >= at { Reply::RateLimited(wait) } else { Reply::Ok }
        });
        for e in &trace.effects {
            if let Effect::Wait { seconds, .. } = e {
                waits.push(*seconds);
            }
        }
        prop_assert_eq!(trace.exit, Some(1));
        // The halt names the rate limit and how long it still lasts, not the network.
        let halt = Effect::Halt(HaltReason::RateLimit { wait_secs: wait });
        prop_assert!(trace.effects.contains(&halt), "{:?}", trace.effects);
        prop_assert_eq!(escalations(&trace), 0);
        prop_assert!(waits.iter().all(|w| *w <= Limits::MAX_RATE_LIMIT_WAIT_SECS));
        prop_assert_eq!(waits.len() as u32, limits.max_network_waits);
    }
}
