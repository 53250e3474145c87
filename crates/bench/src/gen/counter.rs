//! `CounterGenerator`: 0, 1, 2, ... from a start value. Clones share one counter, as every
//! YCSB client thread shares the workload's counter object.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use super::{NumberGenerator, RngCore};

/// YCSB's `CounterGenerator`: consecutive numbers, shared by its clones.
#[derive(Debug, Clone)]
pub struct CounterGenerator {
    counter: Arc<AtomicI64>,
}

impl CounterGenerator {
    /// A counter whose first number is `count_start`.
    pub fn new(count_start: i64) -> Self {
        CounterGenerator {
            counter: Arc::new(AtomicI64::new(count_start)),
        }
    }

    /// The next number; a counter draws nothing random.
    pub fn next(&self) -> i64 {
        self.counter.fetch_add(1, Ordering::SeqCst)
    }

    /// The last number handed out (start - 1 before the first). Wraps as Java's long does,
    /// like `next`.
    pub fn last(&self) -> i64 {
        self.counter.load(Ordering::SeqCst).wrapping_sub(1)
    }
}

impl NumberGenerator for CounterGenerator {
    fn next_value(&mut self, _rng: &mut dyn RngCore) -> i64 {
        self.next()
    }

    fn last_value(&self) -> i64 {
        self.last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_start_and_clones_share() {
        let c = CounterGenerator::new(5);
        assert_eq!(c.last(), 4);
        let d = c.clone();
        assert_eq!(c.next(), 5);
        assert_eq!(d.next(), 6);
        assert_eq!(c.last(), 6);
        assert_eq!(CounterGenerator::new(i64::MIN).last(), i64::MAX);
    }
}
