//! Independent digests computed on several threads.
//!
//! Predicting a boot hashes most of an image several times (its Authenticode hash, the kernel's, each
//! section as the stub measures it) in every bank. Those digests do not depend on one another, so they are
//! spread over `threads` scoped threads, biggest first (longest-processing-time scheduling), and the
//! wall time approaches the largest single digest. No I/O: the inputs are borrowed slices.

use attest_engine::crypto::{CryptoProvider, Digest, HashAlgorithm};

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

/// Jobs smaller than this run on the calling thread (a thread costs more than hashing a few KiB).
const INLINE_BELOW: usize = 256 * 1024;

/// Computes every job's digest, in job order, on at most `threads` threads (at least one).
pub(crate) fn run(provider: &CryptoProvider, jobs: &[Job<'_>], threads: usize) -> Vec<Digest> {
    let mut out: Vec<Option<Digest>> = vec![None; jobs.len()];
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| core::cmp::Reverse(jobs[i].len()));
    let threads = threads.max(1);
    // Greedy assignment of the big jobs to the least-loaded worker.
    let mut workers: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); threads];
    let mut inline = Vec::new();
    for i in order {
        if jobs[i].len() < INLINE_BELOW || threads == 1 {
            inline.push(i);
            continue;
        }
        let w = workers.iter_mut().min_by_key(|(load, _)| *load).map(|w| {
            w.0 += jobs[i].len();
            &mut w.1
        });
        if let Some(list) = w {
            list.push(i);
        }
    }
    let compute = |i: usize| (i, provider.digests.digest(jobs[i].alg, &jobs[i].parts));
    std::thread::scope(|scope| {
        // The first worker's share runs here; the others on their own threads.
        let mut handles = Vec::new();
        for (_, list) in workers.iter().skip(1).filter(|(_, l)| !l.is_empty()) {
            handles.push(scope.spawn(move || list.iter().map(|&i| compute(i)).collect::<Vec<_>>()));
        }
        for &i in workers.first().map(|w| w.1.as_slice()).unwrap_or_default().iter().chain(&inline) {
            let (i, d) = compute(i);
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
    out.into_iter().enumerate().map(|(i, d)| d.unwrap_or_else(|| compute(i).1)).collect()
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
