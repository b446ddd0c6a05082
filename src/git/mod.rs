//! Git, the port's adapter: every git command of the runner lives in this folder (the fake
//! agent's scripted commits aside). `repo` is the project's clone behind `GitPort`;
//! `exclude` the runner's lines in `.git/info/exclude`.

pub mod command;
pub mod exclude;
pub mod port;
pub mod repo;
mod runner_dir;
pub mod trust;
