//! Independent digests computed on several threads.
//!
//! Predicting a boot hashes most of an image several times (its Authenticode hash, the kernel's, each
//! section as the stub measures it) in every bank. Those digests do not depend on one another, so they are
//! spread over `threads` scoped threads that take the next job, biggest first, whenever they finish one
//! (a shared queue): the banks differ several-fold in speed per byte (SHA-256 with the SHA extensions
//! against SHA-384 without), so a static split by bytes would leave one thread with all the slow bank's
//! work, while taking jobs as threads free up balances by time without knowing the costs. The wall time
//! approaches the larger of the biggest single digest and half the total. No I/O: the inputs are borrowed
//! slices.

use attest_engine::crypto::{CryptoProvider, Digest, HashAlgorithm};
use std::sync::atomic::{AtomicUsize, Ordering};

/// One digest to compute: `alg` over the concatenation of `parts`.
#[derive(Clone, Debug)]
pub(crate) struct Job<'a> {
    pub(crate) alg: HashAlgorithm,
    pub(crate) parts: Vec<&'a [u8]>,
}

impl Job<'_> {
    fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len()).sum()
    }
}

/// Jobs smaller than this run on the calling thread after the queue (a thread costs more than hashing a
/// few KiB).
const INLINE_BELOW: usize = 256 * 1024;

/// Computes every job's digest, in job order, on at most `threads` threads (at least one).
pub(crate) fn run(provider: &CryptoProvider, jobs: &[Job<'_>], threads: usize) -> Vec<Digest> {
    let compute = |i: usize| provider.digests.digest(jobs[i].alg, &jobs[i].parts);
    let threads = threads.max(1);
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| core::cmp::Reverse(jobs[i].len()));
    let big = if threads == 1 { 0 } else { order.iter().take_while(|&&i| jobs[i].len() >= INLINE_BELOW).count() };
    let (queue, inline) = order.split_at(big);
    let next = AtomicUsize::new(0);
    let worker = || {
        let mut done = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = queue.get(k) else { break };
            done.push((i, compute(i)));
        }
        done
    };
    let mut out: Vec<Option<Digest>> = vec![None; jobs.len()];
    std::thread::scope(|scope| {
        // The calling thread is one of the workers.
        let handles: Vec<_> = (1..threads.min(queue.len())).map(|_| scope.spawn(worker)).collect();
        for (i, d) in worker() {
            out[i] = Some(d);
        }
        for h in handles {
            // A panic inside a digest would be a bug in the provider; recompute rather than propagate.
            if let Ok(done) = h.join() {
                for (i, d) in done {
                    out[i] = Some(d);
                }
            }
        }
    });
    for &i in inline {
        out[i] = Some(compute(i));
    }
    out.into_iter().enumerate().map(|(i, d)| d.unwrap_or_else(|| compute(i))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_digests_on_any_number_of_threads() {
        let provider = attest_engine::crypto::default_provider();
        let big = vec![7u8; 600 * 1024];
        let jobs: Vec<Job<'_>> = [HashAlgorithm::Sha256, HashAlgorithm::Sha384]
            .into_iter()
            .flat_map(|alg| {
                [
                    Job { alg, parts: vec![&big[..], b"x"] },
                    Job { alg, parts: vec![b"abc"] },
                    Job { alg, parts: vec![&big[..300 * 1024]] },
                ]
            })
            .collect();
        let one = run(provider, &jobs, 1);
        for threads in [2, 3, 8] {
            assert_eq!(run(provider, &jobs, threads), one);
        }
        assert_eq!(one[1].as_bytes(), provider.digests.sha256(b"abc"));
    }
}
