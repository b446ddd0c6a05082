//! What the runner does around a step through the ports, without deciding anything the
//! machine decides: the zero-token steps it runs itself (`builtin`) and the checks before and
//! after a step (`checks`: preconditions, post-step checks, whether a side-effecting step's
//! outcome already holds, how far a branch the journal does not know got) and the runner's
//! commit and push after an agent's repair (`repair`), and the test-weakening check before
//! each of those pushes (`weakening`).

pub mod builtin;
pub mod checks;
mod failed;
pub mod repair;
pub mod weakening;
