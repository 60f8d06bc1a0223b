//! Budgets: a sink that counts model requests, tokens and estimated cost as episodes finish, and
//! stops the run's scheduling (in-flight trials finish) once a limit is reached.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::events::{EventSink, RunEvent, RunEventKind};
use crate::config::{Budget, Price};
use crate::episode::Episode;

/// The price of a host's model: by the host as shown (`openai:gpt-4.1-mini`), its bare model
/// name, or the model the provider named.
pub fn price_for<'a>(
    host: &str,
    model: &str,
    prices: &'a BTreeMap<String, Price>,
) -> Option<&'a Price> {
    let bare = host.split_once(':').map(|(_, m)| m);
    prices
        .get(host)
        .or_else(|| bare.and_then(|m| prices.get(m)))
        .or_else(|| prices.get(model))
}

/// The estimated cost of `input` and `output` tokens at `price`, in US dollars.
pub fn cost(price: &Price, input: u64, output: u64) -> f64 {
    (input as f64 * price.input + output as f64 * price.output) / 1e6
}

/// The estimated cost of an episode in US dollars; `None` when no price is known for its host.
pub fn episode_cost(e: &Episode, prices: &BTreeMap<String, Price>) -> Option<f64> {
    let price = price_for(&e.host, &e.model, prices)?;
    Some(cost(price, e.input_tokens, e.output_tokens))
}

/// What a run has used so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub requests: u64,
    pub tokens: u64,
    pub cost_usd: f64,
}

impl Spent {
    /// Adds what a finished episode used (a judge's call and a simulated user's requests cost
    /// like the model's: counted here, though apart in the statistics).
    pub fn add(&mut self, e: &Episode, prices: &BTreeMap<String, Price>) {
        let judged = e.judge_input_tokens + e.judge_output_tokens > 0;
        let users = e.user_turns.iter().filter(|t| t.user_input_tokens > 0);
        let (user_requests, user_tokens) = users.fold((0, 0), |(n, tokens), t| {
            (n + 1, tokens + t.user_input_tokens + t.user_output_tokens)
        });
        self.requests += u64::from(e.turns) + u64::from(judged) + user_requests;
        self.tokens += e.input_tokens
            + e.output_tokens
            + e.judge_input_tokens
            + e.judge_output_tokens
            + user_tokens;
        self.cost_usd += episode_cost(e, prices).unwrap_or(0.0);
    }
}

/// Counts what finished episodes used; cancels scheduling when a limit is reached. The reason is
/// kept in `reached` for the run to report.
pub struct BudgetGuard {
    budget: Budget,
    prices: BTreeMap<String, Price>,
    spent: Spent,
    cancel: CancellationToken,
    reached: Arc<Mutex<Option<String>>>,
}

impl BudgetGuard {
    /// `earlier`: what the episodes of an earlier invocation used (a resumed run spends from the
    /// same budget).
    pub fn new(
        budget: Budget,
        prices: BTreeMap<String, Price>,
        earlier: Spent,
        cancel: CancellationToken,
    ) -> (Self, Arc<Mutex<Option<String>>>) {
        let reached = Arc::new(Mutex::new(None));
        let mut guard = Self {
            budget,
            prices,
            spent: earlier,
            cancel,
            reached: reached.clone(),
        };
        guard.check();
        (guard, reached)
    }

    fn add(&mut self, e: &Episode) {
        self.spent.add(e, &self.prices);
    }

    fn check(&mut self) {
        let b = &self.budget;
        let s = &self.spent;
        let over = if b.max_requests.is_some_and(|m| s.requests >= m) {
            Some(format!(
                "{} model requests (max_requests = {})",
                s.requests,
                b.max_requests.unwrap_or(0)
            ))
        } else if b.max_tokens.is_some_and(|m| s.tokens >= m) {
            Some(format!(
                "{} tokens (max_tokens = {})",
                s.tokens,
                b.max_tokens.unwrap_or(0)
            ))
        } else if b.max_cost_usd.is_some_and(|m| s.cost_usd >= m) {
            Some(format!(
                "an estimated ${:.2} (max_cost_usd = {})",
                s.cost_usd,
                b.max_cost_usd.unwrap_or(0.0)
            ))
        } else {
            None
        };
        if let Some(reason) = over {
            let mut reached = self.reached.lock().expect("budget lock");
            if reached.is_none() {
                *reached = Some(format!("budget reached: {reason}"));
                self.cancel.cancel();
            }
        }
    }
}

impl EventSink for BudgetGuard {
    fn handle(&mut self, event: &RunEvent) -> anyhow::Result<()> {
        if let RunEventKind::TrialFinished { episode, .. } = &event.kind {
            self.add(episode);
            self.check();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn episode(host: &str, turns: u32, input: u64, output: u64) -> Episode {
        let mut e = crate::test_support::sample_episode("t", crate::episode::Side::Baseline, true);
        e.host = host.into();
        e.turns = turns;
        e.input_tokens = input;
        e.output_tokens = output;
        e.total_tokens = input + output;
        e
    }

    #[test]
    fn costs_come_from_the_host_or_the_bare_model_name() {
        let prices = BTreeMap::from([(
            "gpt-x".to_owned(),
            Price {
                input: 1.0,
                output: 4.0,
            },
        )]);
        let e = episode("openai:gpt-x", 2, 1_000_000, 500_000);
        assert_eq!(episode_cost(&e, &prices), Some(3.0));
        assert_eq!(episode_cost(&episode("sim", 1, 10, 10), &prices), None);
    }

    #[test]
    fn reaching_a_limit_cancels_scheduling_once() {
        let cancel = CancellationToken::new();
        let budget = Budget {
            max_requests: Some(5),
            ..Budget::default()
        };
        let (mut guard, reached) =
            BudgetGuard::new(budget, BTreeMap::new(), Spent::default(), cancel.clone());
        guard.add(&episode("sim", 3, 10, 10));
        guard.check();
        assert!(!cancel.is_cancelled());
        guard.add(&episode("sim", 2, 10, 10));
        guard.check();
        assert!(cancel.is_cancelled());
        let reason = reached.lock().unwrap().clone().unwrap();
        assert!(reason.contains("5 model requests"), "{reason}");
    }
}
