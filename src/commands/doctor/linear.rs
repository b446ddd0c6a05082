//! `doctor` on Linear: the key, the team, the selection label and the completed state merged
//! issues move to, asked of Linear's API as `run` will ask it.

use super::Check;
use crate::services::linear::Linear;

/// The checks of a config whose tracker is Linear.
pub(super) fn checks(linear: &Linear) -> Vec<Check> {
    let facts = match linear.team_facts() {
        Ok(facts) => facts,
        Err(e) => {
            return vec![Check::fail(
                "linear",
                e.to_string(),
                format!(
                    "check linear.url ({}) and that the key in {} is valid and may read team {}",
                    linear.api.base, linear.api.token_env, linear.team
                ),
            )]
        }
    };
    let mut out = vec![Check::ok(
        "linear",
        format!(
            "the key in {} is {}'s",
            linear.api.token_env,
            if facts.viewer.is_empty() {
                "an account"
            } else {
                &facts.viewer
            }
        ),
    )];
    let Some(team) = facts.team else {
        out.push(Check::fail(
            "linear",
            format!(
                "no team with the key {} is visible to this key",
                linear.team
            ),
            "set linear.team to the team's key (the prefix of its issues' identifiers, `ENG` in ENG-123), or give the key's account access to the team",
        ));
        return out;
    };
    out.push(Check::ok(
        "linear",
        format!("team {} ({team}) readable", linear.team),
    ));
    out.push(if facts.label {
        Check::ok("linear", format!("label {} exists", linear.label))
    } else {
        Check::warn(
            "linear",
            format!(
                "team {} has no label {}: no issue is selected",
                linear.team, linear.label
            ),
            format!(
                "create the label {} in the team and put it on the issues to work",
                linear.label
            ),
        )
    });
    out.push(if facts.completed_state {
        Check::ok("linear", "the team's workflow has a completed state for merged issues")
    } else {
        Check::fail(
            "linear",
            format!(
                "team {}'s workflow has no completed state: a merged issue could not be moved to done",
                linear.team
            ),
            "add a state of type Completed to the team's workflow",
        )
    });
    out
}
