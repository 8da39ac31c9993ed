// SPDX-License-Identifier: GPL-2.0

//! A bitmap over every possible pid whose bits can be read and changed from any context, with
//! a summary of the words in use so that walking it does not read every word.

use crate::kernel_ext::atomic::read_once;
use crate::kernel_ext::kcrate::{
    alloc::{flags::GFP_KERNEL, VVec},
    sync::atomic::{Atomic, Full, Relaxed, Release},
};
use crate::kernel_ext::prelude::*;

/// Highest pid the kernel can hand out, plus one (`PID_MAX_LIMIT` on 64-bit).
pub(crate) const PID_LIMIT: usize = 4 * 1024 * 1024;

const WORD_BITS: usize = 64;
const WORDS: usize = PID_LIMIT / WORD_BITS;

/// A bitmap over pids whose bits can be read and changed from any context.
///
/// A summary bitmap has a bit per word that may be non-zero, so that walking the set bits
/// reads 1024 summary words and the used words rather than all 65536.
pub(super) struct PidBitmap {
    words: VVec<Atomic<u64>>,
    /// Bit `i % 64` of word `i / 64` is set once word `i` has had a bit set (cleared only
    /// by [`PidBitmap::clear_all`]).
    used: VVec<Atomic<u64>>,
}

impl PidBitmap {
    pub(super) fn new() -> Result<Self> {
        let mut words = VVec::with_capacity(WORDS, GFP_KERNEL)?;
        for _ in 0..WORDS {
            words.push(Atomic::new(0), GFP_KERNEL)?;
        }
        let mut used = VVec::with_capacity(WORDS / WORD_BITS, GFP_KERNEL)?;
        for _ in 0..WORDS / WORD_BITS {
            used.push(Atomic::new(0), GFP_KERNEL)?;
        }
        Ok(Self { words, used })
    }

    /// Notes that word `index` may have bits set.
    fn mark_used(&self, index: usize) {
        if let Some(summary) = self.used.get(index / WORD_BITS) {
            let bit = 1u64 << (index % WORD_BITS);
            if summary.load(Relaxed) & bit == 0 {
                let mut old = summary.load(Relaxed);
                while let Err(current) = summary.cmpxchg(old, old | bit, Full) {
                    old = current;
                }
            }
        }
    }

    #[inline]
    fn word(&self, pid: i32) -> Option<(&Atomic<u64>, u64)> {
        let pid = usize::try_from(pid).ok()?;
        let word = self.words.get(pid / WORD_BITS)?;
        Some((word, 1 << (pid % WORD_BITS)))
    }

    #[inline]
    pub(super) fn contains(&self, pid: i32) -> bool {
        // `read_once`, not `Atomic::load` (an out-of-line C helper): every fault of every
        // process runs this while anything is watched.
        self.word(pid)
            .is_some_and(|(word, bit)| read_once(word) & bit != 0)
    }

    /// Sets or clears the bit of `pid`, fully ordered; returns whether it was set before.
    pub(super) fn update(&self, pid: i32, set: bool) -> bool {
        let Some((word, bit)) = self.word(pid) else {
            return false;
        };
        let mut old = word.load(Relaxed);
        let was_set = loop {
            let new = if set { old | bit } else { old & !bit };
            if new == old {
                break old & bit != 0;
            }
            match word.cmpxchg(old, new, Full) {
                Ok(_) => break old & bit != 0,
                Err(current) => old = current,
            }
        };
        // After the bit: a `clear_all` in between (which clears the summary first) leaves the
        // summary set, never a set bit under a clear summary.
        if set {
            // CAST: `word` succeeded, so `pid` is a valid non-negative index.
            self.mark_used(pid as usize / WORD_BITS);
        }
        was_set
    }

    /// Clears every bit; returns how many it cleared (each bit set before or meanwhile is
    /// cleared and counted once, by this or by an `update` that clears it first). Updates of
    /// single bits may run meanwhile (from probes): the summaries are cleared before the
    /// words, and `update` marks a word used after setting its bit, so a bit set meanwhile is
    /// always found by `for_each`. Walks every word (the summaries are gone by then): a rare
    /// request, under the writers' mutex.
    pub(super) fn clear_all(&self) -> u32 {
        for summary in self.used.iter() {
            summary.store(0, Release);
        }
        let mut cleared = 0;
        for word in self.words.iter() {
            if word.load(Relaxed) != 0 {
                cleared += word.xchg(0, Full).count_ones();
            }
        }
        cleared
    }

    fn for_each_used(&self, mut f: impl FnMut(usize, &Atomic<u64>)) {
        for (summary_index, summary) in self.used.iter().enumerate() {
            let mut used = summary.load(Relaxed);
            while used != 0 {
                // CAST: trailing_zeros of a u64 is below 64.
                let index = summary_index * WORD_BITS + used.trailing_zeros() as usize;
                if let Some(word) = self.words.get(index) {
                    f(index, word);
                }
                used &= used - 1;
            }
        }
    }

    /// Clears every bit, walking only the words marked used; returns how many it cleared.
    /// Only for a bitmap whose bits are all set and cleared under one lock, held.
    pub(super) fn clear_used(&self) -> u32 {
        let mut cleared = 0;
        self.for_each_used(|_, word| {
            if word.load(Relaxed) != 0 {
                cleared += word.xchg(0, Full).count_ones();
            }
        });
        for summary in self.used.iter() {
            summary.store(0, Release);
        }
        cleared
    }

    /// Calls `f` for every set pid, in increasing order.
    pub(super) fn for_each(&self, mut f: impl FnMut(usize)) {
        self.for_each_used(|index, word| {
            let mut bits = word.load(Relaxed);
            while bits != 0 {
                // CAST: trailing_zeros of a u64 is below 64.
                let bit = bits.trailing_zeros() as usize;
                f(index * WORD_BITS + bit);
                bits &= bits - 1;
            }
        });
    }

    /// Bytes of the bitmap and its summary (fixed: allocated at load for every possible pid).
    pub(super) fn bytes(&self) -> usize {
        (self.words.len() + self.used.len()) * size_of::<u64>()
    }
}
