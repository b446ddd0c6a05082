//! The pure core of sdlc-runner: the hierarchical lifecycle machine (`machine`), the ten
//! steps and their precondition checks (`step`), the failure classes with what each means
//! for the machine (`failure`), the severities notices are delivered by (`severity`), and the
//! coordinator of `run --workers N` with the merge policies every runner follows (`fleet`),
//! the digests the state searches remember machine values by (`digest`), and the machine
//! explored into the graph its state diagrams draw (`explore`).
//!
//! It is a crate of its own so that the compiler, not a convention, keeps it sans-IO: its
//! only dependencies are `statig` and `serde`, so it cannot spawn a process, read a file or a
//! clock. It also compiles in seconds, which is what lets a mutation run
//! (`cargo mutants`, see ARCHITECTURE.md) try every mutant of the machine.
#![warn(missing_docs)]

pub mod digest;
pub mod explore;
pub mod failure;
pub mod fleet;
pub mod machine;
pub mod severity;
pub mod step;
