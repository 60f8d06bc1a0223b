//! `mcpeval agree RUN_A [RUN_B]`: do two hosts' verdicts agree? Each task's success verdict per
//! host (regression, improvement, neither), Cohen's kappa over the tasks, Spearman's rho of the
//! deltas, the tasks they disagree on; and `plan --agreement`, what a screening host misses.

mod error;
mod pair;
mod read;
mod run;
mod screen;
mod write;

pub use error::AgreeError;
pub use pair::{PairAgreement, TaskPair};
pub use read::Class;
pub use run::{agree, AgreeRequest, Agreed};
pub use screen::screen;
pub use write::{disagreements, kappa_line, spearman_line, AGREEMENT_CSV};
