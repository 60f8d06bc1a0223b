//! What the runner asks of an adaptive run's stopping rule after each look. The rule itself
//! (analysis' `AdaptivePolicy`) lives above the runner, which knows it only through this trait;
//! how the budget's looks are shared out ([`allocate`]) is the runner's own.

use crate::episode::Episode;

/// An adaptive run's stopping rule: trials run in looks, and a task settled after a look runs no
/// more. It is fed every finished trial.
pub trait StoppingRule: Send + Sync {
    /// Trials per side at each look.
    fn looks(&self) -> Vec<u32>;
    /// Takes in a finished trial.
    fn record(&self, episode: &Episode);
    /// Whether the task is settled after the looks whose trials have all finished.
    fn settled(&self, host: &str, task: &str) -> bool;
    /// Trials per side recorded so far over every task.
    fn trials(&self) -> u64;
    /// How likely the task is to end as a regression (the budget's looks go to the likeliest).
    fn priority(&self, host: &str, task: &str) -> f64;
    /// The run's trials per side, if it has a budget.
    fn budget(&self) -> Option<u64>;
}

/// Which of the tasks still running get their next look, of `need` trials per side each, from
/// `left` trials per side of the run's budget (`None`: no budget): every one if they fit, else
/// as many as fit, highest `priority` first (ties in the order given).
pub fn allocate(priorities: &[f64], need: u64, left: Option<u64>) -> Vec<bool> {
    let Some(left) = left else {
        return vec![true; priorities.len()];
    };
    let fit = left
        .checked_div(need)
        .map_or(priorities.len(), |f| f as usize);
    if fit >= priorities.len() {
        return vec![true; priorities.len()];
    }
    let mut order: Vec<usize> = (0..priorities.len()).collect();
    order.sort_by(|&a, &b| priorities[b].total_cmp(&priorities[a]));
    let mut chosen = vec![false; priorities.len()];
    for &i in order.iter().take(fit) {
        chosen[i] = true;
    }
    chosen
}
