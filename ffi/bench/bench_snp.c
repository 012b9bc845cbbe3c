/* Warm SEV-SNP verify through the C API, timed from C: N calls per round, R rounds, per-call time of each
 * round and their median and minimum. Input as benches/benches/snp.rs (constellation-azure-snp, vcek.cert,
 * expected REPORT_DATA, 2025-06-01, default policy); the chain cache is warmed by one call first.
 *   ffi/bench/run.sh [N] [R]     (builds with -O2 against the release staticlib, runs under taskset) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest.h"

static uint8_t *slurp(const char *dir, const char *rel, size_t *len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) exit(2);
  fclose(f);
  *len = (size_t)n;
  return b;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 2000, rounds = argc > 2 ? atoi(argv[2]) : 7;
  const char *dir = getenv("ATTEST_TESTDATA") ? getenv("ATTEST_TESTDATA") : "../shared/testdata";
  size_t rlen, vlen;
  uint8_t *report = slurp(dir, "constellation-azure-snp/attestation.bin", &rlen);
  uint8_t *vcek = slurp(dir, "constellation-azure-snp/vcek.cert", &vlen);
  static const uint8_t rd[64] = {0x0c, 0xcc, 0x08, 0x95, 0xef, 0x2f, 0x2c, 0x3b, 0x8c, 0x85, 0x68,
                                 0xf5, 0xa2, 0xbb, 0x65, 0xff, 0x5b, 0xf9, 0x38, 0x7a, 0x09, 0x35,
                                 0x97, 0x42, 0xad, 0x41, 0xe6, 0x86, 0xca, 0xcf, 0xd3, 0x8b};
  const uint64_t t = 1748736000; /* 2025-06-01 */
  attest_verifier *v = NULL;
  attest_verdict *vd = NULL;
  if (attest_verifier_new(&v) != ATTEST_RESULT_OK) return 1;
  if (attest_verifier_verify_snp(v, report, 0x4A0, vcek, vlen, NULL, 0, rd, 64, t, &vd) != ATTEST_RESULT_OK) {
    fprintf(stderr, "verification failed\n");
    return 1;
  }
  attest_verdict_free(vd);
  double *per_call = calloc((size_t)rounds, sizeof *per_call);
  for (int r = 0; r < rounds; r++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
      if (attest_verifier_verify_snp(v, report, 0x4A0, vcek, vlen, NULL, 0, rd, 64, t, &vd) != ATTEST_RESULT_OK) return 1;
      attest_verdict_free(vd);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    per_call[r] = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n / 1000.0;
    printf("round %d: %.2f us/call\n", r + 1, per_call[r]);
  }
  qsort(per_call, (size_t)rounds, sizeof *per_call, cmp);
  printf("c_abi_warm_verify: median %.2f us, min %.2f us (%d rounds x %d calls)\n", per_call[rounds / 2], per_call[0],
         rounds, n);
  free(per_call);
  attest_verifier_free(v);
  free(report);
  free(vcek);
  return 0;
}
