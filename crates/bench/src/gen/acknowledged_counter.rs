//! `AcknowledgedCounterGenerator`: a counter whose "last value" is the highest number below
//! which every number handed out has been acknowledged (its insert completed), so readers
//! never ask for a key that may not exist yet.
//!
//! As in YCSB, acknowledgements land in a ring of 2^20 slots; the one acknowledging thread
//! that wins a try-lock moves the limit over the contiguous run of acknowledged slots after
//! it. A thread that loses the try-lock leaves its slot set for the next winner. More than
//! 2^20 numbers outstanding is an error. Clones share one counter.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use super::{CounterGenerator, NumberGenerator, RngCore};
use crate::error::{Error, Result};

/// Size of the window of pending acknowledgements: 2^20.
pub const WINDOW_SIZE: usize = 1 << 20;
const WINDOW_MASK: i64 = WINDOW_SIZE as i64 - 1;

#[derive(Debug)]
struct Window {
    slots: Box<[AtomicBool]>,
    limit: AtomicI64,
    lock: Mutex<()>,
}

/// YCSB's `AcknowledgedCounterGenerator`: hands out insert numbers and tracks the highest
/// one below which all are acknowledged. Clones share one counter and window.
#[derive(Debug, Clone)]
pub struct AcknowledgedCounterGenerator {
    counter: CounterGenerator,
    window: Arc<Window>,
}

impl Window {
    /// The slot of `value` in the window.
    // `slots` has WINDOW_SIZE entries and WINDOW_MASK is WINDOW_SIZE - 1, so the masked
    // value is an index of it.
    #[allow(clippy::indexing_slicing)]
    fn slot(&self, value: i64) -> &AtomicBool {
        &self.slots[(value & WINDOW_MASK) as usize]
    }
}

impl AcknowledgedCounterGenerator {
    /// A counter whose first number is `count_start`; nothing is acknowledged yet, so the
    /// limit starts at `count_start - 1`.
    pub fn new(count_start: i64) -> Self {
        let slots = (0..WINDOW_SIZE).map(|_| AtomicBool::new(false)).collect();
        AcknowledgedCounterGenerator {
            counter: CounterGenerator::new(count_start),
            window: Arc::new(Window {
                slots,
                limit: AtomicI64::new(count_start.wrapping_sub(1)),
                lock: Mutex::new(()),
            }),
        }
    }

    /// The next number to insert; it counts for `limit` only once acknowledged.
    pub fn next(&self) -> i64 {
        self.counter.next()
    }

    /// The highest acknowledged number (with all below it acknowledged too).
    pub fn limit(&self) -> i64 {
        self.window.limit.load(Ordering::SeqCst)
    }

    /// Marks `value` done, and moves the limit if this caller gets the lock.
    pub fn acknowledge(&self, value: i64) -> Result<()> {
        if self.window.slot(value).swap(true, Ordering::SeqCst) {
            return Err(Error::TooManyUnacknowledged {
                keynum: value,
                window: WINDOW_SIZE,
            });
        }
        if let Ok(_guard) = self.window.lock.try_lock() {
            self.advance_limit();
        }
        Ok(())
    }

    /// Walks from limit + 1 over acknowledged slots, clearing them. The loop bound is
    /// YCSB's: it compares the running number with the limit's slot index, so it stops at
    /// the first unacknowledged slot in practice.
    fn advance_limit(&self) {
        let limit = self.limit();
        let before_first_slot = limit & WINDOW_MASK;
        let mut index = limit.wrapping_add(1);
        while index != before_first_slot {
            let slot = self.window.slot(index);
            if !slot.load(Ordering::SeqCst) {
                break;
            }
            slot.store(false, Ordering::SeqCst);
            index = index.wrapping_add(1);
        }
        self.window
            .limit
            .store(index.wrapping_sub(1), Ordering::SeqCst);
    }
}

impl NumberGenerator for AcknowledgedCounterGenerator {
    fn next_value(&mut self, _rng: &mut dyn RngCore) -> i64 {
        self.next()
    }

    /// As YCSB's: the acknowledged limit, not the last number handed out.
    fn last_value(&self) -> i64 {
        self.limit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_moves_only_over_contiguous_acknowledgements() {
        let c = AcknowledgedCounterGenerator::new(100);
        assert_eq!(c.limit(), 99);
        let (a, b, d) = (c.next(), c.next(), c.next());
        assert_eq!((a, b, d), (100, 101, 102));
        c.acknowledge(b).unwrap();
        assert_eq!(c.limit(), 99, "100 is still pending");
        c.acknowledge(d).unwrap();
        assert_eq!(c.limit(), 99);
        c.acknowledge(a).unwrap();
        assert_eq!(c.limit(), 102);
    }

    /// The numbers wrap as Java's longs do: no start value panics.
    #[test]
    fn extreme_start_wraps() {
        let c = AcknowledgedCounterGenerator::new(i64::MIN);
        assert_eq!(c.limit(), i64::MAX);
        c.acknowledge(c.next()).unwrap();
        assert_eq!(c.limit(), i64::MIN);
    }

    #[test]
    fn acknowledging_twice_a_pending_slot_is_an_error() {
        let c = AcknowledgedCounterGenerator::new(0);
        let a = c.next();
        let b = c.next();
        c.acknowledge(b).unwrap();
        assert!(matches!(
            c.acknowledge(b),
            Err(Error::TooManyUnacknowledged { .. })
        ));
        c.acknowledge(a).unwrap();
        assert_eq!(c.limit(), 1);
    }

    /// Number 1 and number 1 + 2^20 share a slot: while 0 is pending, 1 is acknowledged but
    /// not yet moved past, so acknowledging its twin a window later overflows.
    #[test]
    fn window_overflow_is_an_error() {
        let c = AcknowledgedCounterGenerator::new(0);
        for _ in 0..WINDOW_SIZE + 2 {
            c.next();
        }
        c.acknowledge(1).unwrap();
        let twin = 1 + WINDOW_SIZE as i64;
        assert_eq!(
            c.acknowledge(twin),
            Err(Error::TooManyUnacknowledged {
                keynum: twin,
                window: WINDOW_SIZE
            })
        );
        assert_eq!(c.limit(), -1);
    }
}
