//! The schedule of a run: every (host, task, trial, side), paired, in a seeded interleaved order.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xxhash_rust::xxh3::xxh3_64;

use crate::episode::Side;

/// One trial to run, by index into the run's hosts and tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrialKey {
    pub host: usize,
    pub task: usize,
    pub trial: u32,
    pub side: Side,
}

/// The seed of a trial: derived from (run seed, task id, trial index) alone, so it is the same on
/// both sides and for every host (common random numbers), and a resumed or sharded trial
/// reproduces exactly.
pub fn trial_seed(run_seed: u64, task_id: &str, trial: u32) -> u64 {
    let mut bytes = Vec::with_capacity(task_id.len() + 12);
    bytes.extend_from_slice(&run_seed.to_le_bytes());
    bytes.extend_from_slice(task_id.as_bytes());
    bytes.extend_from_slice(&trial.to_le_bytes());
    xxh3_64(&bytes)
}

/// All trials in run order: pairs (baseline, candidate of one host × task × trial) are shuffled
/// with the run seed, and each pair's two sides run next to each other in a random order, so
/// that drift of a provider over the run hits both sides alike.
pub fn schedule(hosts: usize, tasks: usize, trials: u32, seed: u64) -> Vec<TrialKey> {
    Schedule::new(hosts, tasks, trials, seed).iter().collect()
}

/// The run order of [`schedule`], kept in 8 bytes per pair of trials (not 24 per trial): each
/// pair as its place in host × task × trial order, and which side goes first as one bit.
/// Iterate it as often as needed with [`Schedule::iter`].
pub struct Schedule {
    /// Per pair in run order: `place << 1 | candidate_first`.
    pairs: Vec<u64>,
    tasks: u64,
    trials: u64,
}

impl Schedule {
    pub fn new(hosts: usize, tasks: usize, trials: u32, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x005e_ed0f_5c4e_d01e);
        let (tasks, trials) = (tasks as u64, u64::from(trials));
        let mut pairs: Vec<u64> = (0..hosts as u64 * tasks * trials).collect();
        // The same draws, pair by pair, as shuffling the pairs themselves and then each pair's
        // sides: a shuffle's draws depend on the length only, not on what is shuffled.
        pairs.shuffle(&mut rng);
        for pair in &mut pairs {
            let mut sides = Side::BOTH;
            sides.shuffle(&mut rng);
            *pair = *pair << 1 | u64::from(sides[0] == Side::Candidate);
        }
        Self {
            pairs,
            tasks,
            trials,
        }
    }

    /// The same order with each pair's baseline trial first (`--replay-user-turns`: a candidate
    /// trial replays its baseline trial's user messages).
    pub fn baseline_first(mut self) -> Self {
        for pair in &mut self.pairs {
            *pair &= !1;
        }
        self
    }

    /// Every trial in run order.
    pub fn iter(&self) -> impl Iterator<Item = TrialKey> + '_ {
        self.pairs.iter().flat_map(move |&pair| {
            let place = pair >> 1;
            let trial = (place % self.trials) as u32;
            let task = (place / self.trials % self.tasks) as usize;
            let host = (place / self.trials / self.tasks) as usize;
            let sides = match pair & 1 {
                0 => Side::BOTH,
                _ => [Side::BOTH[1], Side::BOTH[0]],
            };
            sides.map(|side| TrialKey {
                host,
                task,
                trial,
                side,
            })
        })
    }
}

/// [`schedule`] as it was built before [`Schedule`]: the pairs shuffled as triples, each pair's
/// sides shuffled in turn. Kept to show that the compact schedule gives the same order.
#[cfg(test)]
fn schedule_of_triples(hosts: usize, tasks: usize, trials: u32, seed: u64) -> Vec<TrialKey> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x005e_ed0f_5c4e_d01e);
    let mut pairs: Vec<(usize, usize, u32)> = (0..hosts)
        .flat_map(|h| (0..tasks).flat_map(move |t| (0..trials).map(move |i| (h, t, i))))
        .collect();
    pairs.shuffle(&mut rng);
    let mut order = Vec::with_capacity(pairs.len() * 2);
    for (host, task, trial) in pairs {
        let mut sides = Side::BOTH;
        sides.shuffle(&mut rng);
        order.extend(sides.map(|side| TrialKey {
            host,
            task,
            trial,
            side,
        }));
    }
    order
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_trial_once_sides_adjacent_and_seeded() {
        let order = schedule(2, 5, 3, 7);
        assert_eq!(order.len(), 2 * 5 * 3 * 2);
        let unique: HashSet<_> = order.iter().collect();
        assert_eq!(unique.len(), order.len());
        for pair in order.chunks(2) {
            assert_eq!(
                (pair[0].host, pair[0].task, pair[0].trial),
                (pair[1].host, pair[1].task, pair[1].trial)
            );
            assert_ne!(pair[0].side, pair[1].side);
        }
        assert_eq!(order, schedule(2, 5, 3, 7));
        assert_ne!(order, schedule(2, 5, 3, 8));
        let baseline_first = order
            .chunks(2)
            .filter(|p| p[0].side == Side::Baseline)
            .count();
        assert!(
            baseline_first > 5 && baseline_first < 25,
            "{baseline_first}"
        );
    }

    #[test]
    fn the_compact_schedule_is_the_order_of_shuffled_triples() {
        for (hosts, tasks, trials, seed) in
            [(1, 18, 56, 42), (2, 5, 3, 7), (3, 1, 1, 0), (2, 7, 0, 1)]
        {
            let compact = Schedule::new(hosts, tasks, trials, seed);
            let order: Vec<TrialKey> = compact.iter().collect();
            assert_eq!(order, schedule_of_triples(hosts, tasks, trials, seed));
            // Iterated again, the same order.
            assert!(compact.iter().eq(order.iter().copied()));
        }
    }

    #[test]
    fn seeds_depend_on_task_and_trial_not_side() {
        assert_eq!(trial_seed(1, "a", 0), trial_seed(1, "a", 0));
        assert_ne!(trial_seed(1, "a", 0), trial_seed(1, "a", 1));
        assert_ne!(trial_seed(1, "a", 0), trial_seed(1, "b", 0));
        assert_ne!(trial_seed(1, "a", 0), trial_seed(2, "a", 0));
    }
}
