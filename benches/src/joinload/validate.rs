//! Does the join service's validation path scale with threads? The exact path `join-service` runs inside
//! each aTLS handshake — `atls::Verifier::verify` (certificate parse, self-signature, replay memory) over
//! the `Validators`' swapping validator (current-set load, engine `qemu-vtpm` validation with the file AK
//! registry, metrics) — built from the fixture's files the way the binary builds it, driven by 1, 2, …
//! threads over pre-made certificates (one per nonce; a certificate verifies once, then it is a replay).
//!
//! Besides throughput, each thread reads its own `/proc/thread-self/schedstat` (time on CPU, time waiting
//! on a run queue) around its run: `blocked = own run time − on-CPU − run-queue wait` is time the thread
//! spent off the CPU without being runnable (summed over the threads). The path does no I/O, so that is time asleep on a lock; a
//! global lock would show as throughput flat in the thread count *and* blocked time growing with it, while
//! a machine that is merely busy shows as run-queue wait.

#![allow(clippy::cast_precision_loss)]

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use attest_atls::{NonceChannel, Verifier, cert};
use attest_engine::variant::Variant;
use attest_joinservice::{Metrics, ValidatorConfig, Validators};
use attest_registration::FileAkRegistry;
use openssl::x509::X509;

use super::fixture::{AK_REGISTRY_FILE, BoxError, MEASUREMENTS_FILE, load_issuers};

/// One measurement: `threads` threads validating `validations` documents in total.
#[derive(Clone, Copy, Debug)]
pub struct ScalingPoint {
    /// Threads.
    pub threads: usize,
    /// Documents validated (all accepted).
    pub validations: usize,
    /// From the common start to the last thread's end.
    pub wall: Duration,
    /// Sum of the threads' time on a CPU.
    pub on_cpu: Duration,
    /// Sum of the threads' time runnable but waiting for a CPU.
    pub runqueue: Duration,
    /// Sum of the threads' own run times (each from the common start to its own end).
    pub thread_wall: Duration,
}

impl ScalingPoint {
    /// Validations per second.
    pub fn per_second(&self) -> f64 {
        self.validations as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Thread time neither on a CPU nor waiting for one (asleep: on a lock, as this path does no I/O).
    pub fn blocked(&self) -> Duration {
        self.thread_wall.saturating_sub(self.on_cpu + self.runqueue)
    }

    /// The point as JSON (times in milliseconds).
    pub fn json(&self) -> serde_json::Value {
        let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
        serde_json::json!({
            "threads": self.threads,
            "validations": self.validations,
            "wall_ms": ms(self.wall),
            "per_second": self.per_second().round(),
            "on_cpu_ms": ms(self.on_cpu),
            "runqueue_ms": ms(self.runqueue),
            "blocked_ms": ms(self.blocked()),
            "cpu_us_per_validation": (self.on_cpu.as_secs_f64() * 1e6 / self.validations.max(1) as f64 * 10.0).round() / 10.0,
        })
    }
}

/// (time on CPU, time waiting on a run queue) of the calling thread; zero where schedstat is unavailable.
fn schedstat() -> (Duration, Duration) {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>().unwrap_or(0));
    (Duration::from_nanos(f.next().unwrap_or(0)), Duration::from_nanos(f.next().unwrap_or(0)))
}

/// The verifier `join-service` builds, from the fixture in `dir`.
pub fn service_verifier(dir: &Path) -> Result<Verifier, BoxError> {
    let registry = Arc::new(FileAkRegistry::open(dir.join(AK_REGISTRY_FILE))?);
    let config = ValidatorConfig::new(vec![Variant::QemuVtpm], registry, super::fixture::measurements_trust(dir)?);
    let validators = Arc::new(Validators::load(config, &dir.join(MEASUREMENTS_FILE), Arc::new(Metrics::new()))?);
    Ok(Verifier::new(validators.attestation_validators()))
}

/// Runs `rounds` rounds; in each, every entry of `threads` once, each thread validating `per_thread`
/// documents of the fixture's AKs. Returns the points in run order.
pub fn validation_scaling(
    dir: &Path,
    threads: &[usize],
    per_thread: usize,
    rounds: usize,
) -> Result<Vec<ScalingPoint>, BoxError> {
    let issuers = load_issuers(dir)?;
    let mut points = Vec::new();
    for _ in 0..rounds {
        for &t in threads {
            // A fresh verifier per point: its replay memory starts empty.
            let verifier = service_verifier(dir)?;
            let mut work: Vec<Vec<(X509, [u8; 32])>> = Vec::with_capacity(t);
            for i in 0..t {
                let mut items = Vec::with_capacity(per_thread);
                for j in 0..per_thread {
                    let mut nonce = [0u8; 32];
                    openssl::rand::rand_bytes(&mut nonce)?;
                    let issuer = &issuers[(i * per_thread + j) % issuers.len()];
                    items.push((cert::attested(&**issuer, &nonce)?.certificate, nonce));
                }
                work.push(items);
            }
            let barrier = Barrier::new(t + 1);
            let (wall, stats) = std::thread::scope(|s| {
                let handles: Vec<_> = work
                    .iter()
                    .map(|items| {
                        let (barrier, verifier) = (&barrier, &verifier);
                        s.spawn(move || {
                            barrier.wait();
                            let (started, before) = (Instant::now(), schedstat());
                            let failures = items
                                .iter()
                                .filter(|(c, n)| verifier.verify(c, n, NonceChannel::AcceptableCa).is_err())
                                .count();
                            let after = schedstat();
                            let cpu = after.0.saturating_sub(before.0);
                            let runqueue = after.1.saturating_sub(before.1);
                            (started.elapsed(), cpu, runqueue, failures)
                        })
                    })
                    .collect();
                barrier.wait();
                let started = Instant::now();
                let stats: Vec<_> = handles.into_iter().map(std::thread::ScopedJoinHandle::join).collect();
                (started.elapsed(), stats)
            });
            let mut point = ScalingPoint {
                threads: t,
                validations: t * per_thread,
                wall,
                on_cpu: Duration::ZERO,
                runqueue: Duration::ZERO,
                thread_wall: Duration::ZERO,
            };
            for s in stats {
                let (own, cpu, rq, failures) = s.map_err(|_| "a validation thread panicked")?;
                if failures > 0 {
                    return Err(format!("{failures} documents were refused").into());
                }
                point.on_cpu += cpu;
                point.runqueue += rq;
                point.thread_wall += own;
            }
            points.push(point);
        }
    }
    Ok(points)
}
