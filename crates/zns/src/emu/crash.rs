//! Kill points between the emulator's own storage steps.
//!
//! A zone command reaches its [`Storage`] as several steps (the data, then the zone table
//! entry; for a reset the entry, then the punch). A process killed between two of them
//! leaves an image that no power cut of the device layer produces. [`CrashPoint`] wraps a
//! storage and lets a fixed number of mutating steps through; the next one is cut short (a
//! write keeps only a prefix of whole blocks, chosen by a seed; any other step does not
//! happen) and every later one is refused with [`ZnsError::PowerLoss`], as if the process had
//! died there. Reopening the image then shows what a SIGKILL at that point leaves: the
//! kernel keeps every byte that a finished system call handed it.

use std::sync::atomic::{AtomicU64, Ordering};

use rand::{Rng, SeedableRng};

use super::Storage;
use crate::error::{Result, ZnsError};
use crate::types::ZoneState;

/// A storage that dies at a given mutating step (see the module doc).
#[derive(Debug)]
pub struct CrashPoint<S: Storage> {
    inner: S,
    /// Steps carried out before the kill.
    budget: u64,
    /// Steps attempted so far.
    attempts: AtomicU64,
    block: u64,
    seed: u64,
}

/// What happens to one step.
enum Fate {
    Run,
    CutShort,
    Dead,
}

impl<S: Storage> CrashPoint<S> {
    /// Carries out `budget` mutating steps (write, truncate, persist, sync), then dies.
    /// `block` is the granularity of the prefix a cut-short write keeps.
    pub fn new(inner: S, budget: u64, block: u32, seed: u64) -> CrashPoint<S> {
        CrashPoint {
            inner,
            budget,
            attempts: AtomicU64::new(0),
            block: u64::from(block.max(1)),
            seed,
        }
    }

    /// A storage that never dies but counts its steps: run a workload on it once to learn
    /// how many kill points it has.
    pub fn counting(inner: S) -> CrashPoint<S> {
        CrashPoint::new(inner, u64::MAX, 1, 0)
    }

    /// Mutating steps attempted so far.
    pub fn steps(&self) -> u64 {
        self.attempts.load(Ordering::SeqCst)
    }

    /// Whether the kill has happened.
    pub fn dead(&self) -> bool {
        self.steps() > self.budget
    }

    fn fate(&self) -> Fate {
        let n = self.attempts.fetch_add(1, Ordering::SeqCst);
        match n.cmp(&self.budget) {
            std::cmp::Ordering::Less => Fate::Run,
            std::cmp::Ordering::Equal => Fate::CutShort,
            std::cmp::Ordering::Greater => Fate::Dead,
        }
    }

    /// Runs a step that is all or nothing.
    fn whole(&self, f: impl FnOnce() -> Result<()>) -> Result<()> {
        match self.fate() {
            Fate::Run => f(),
            Fate::CutShort | Fate::Dead => Err(ZnsError::PowerLoss),
        }
    }
}

impl<S: Storage> Storage for CrashPoint<S> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn write(&self, zone: u32, off: u64, data: &[u8]) -> Result<()> {
        match self.fate() {
            Fate::Run => self.inner.write(zone, off, data),
            Fate::CutShort => {
                let blocks = data.len() as u64 / self.block;
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
                let keep = (rng.random_range(0..=blocks) * self.block) as usize;
                if let Some(kept) = data.get(..keep).filter(|k| !k.is_empty()) {
                    // The process dies after this; what the kernel took stays.
                    let _ = self.inner.write(zone, off, kept);
                }
                Err(ZnsError::PowerLoss)
            }
            Fate::Dead => Err(ZnsError::PowerLoss),
        }
    }

    fn read(&self, zone: u32, off: u64, buf: &mut [u8]) -> Result<()> {
        self.inner.read(zone, off, buf)
    }

    fn overwrite(&self, zone: u32, off: u64, data: &[u8]) -> Result<()> {
        self.whole(|| self.inner.overwrite(zone, off, data))
    }

    fn truncate(&self, zone: u32, len: u64) -> Result<()> {
        self.whole(|| self.inner.truncate(zone, len))
    }

    fn persist(&self, zone: u32, state: ZoneState, written: u64) -> Result<()> {
        self.whole(|| self.inner.persist(zone, state, written))
    }

    fn sync(&self) -> Result<()> {
        self.whole(|| self.inner.sync())
    }

    fn writable(&self) -> bool {
        self.inner.writable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::MemStorage;

    #[test]
    fn the_step_at_the_budget_is_cut_short_and_later_ones_refused() {
        let s = CrashPoint::new(MemStorage::new(1), 1, 512, 7);
        s.write(0, 0, &[1u8; 512]).unwrap();
        assert!(!s.dead());
        assert!(s.write(0, 512, &[2u8; 4096]).is_err());
        assert!(s.dead());
        assert!(matches!(s.sync(), Err(ZnsError::PowerLoss)));
        assert_eq!(s.steps(), 3);
        let mut buf = vec![0u8; 512];
        s.read(0, 0, &mut buf).unwrap();
        assert_eq!(buf, vec![1u8; 512], "steps before the kill stay");
    }

    #[test]
    fn counting_never_dies() {
        let s = CrashPoint::counting(MemStorage::new(1));
        for i in 0..10 {
            s.write(0, i * 512, &[0u8; 512]).unwrap();
        }
        assert_eq!((s.steps(), s.dead()), (10, false));
    }
}
