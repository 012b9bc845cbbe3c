//! Criterion benchmarks for attest; the benchmark targets live in `benches/benches/`.
