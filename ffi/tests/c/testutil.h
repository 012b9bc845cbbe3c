/* Shared helpers of the C tests in ffi/tests/c: testdata lookup, file reading, checks. */
#ifndef ATTEST_TESTUTIL_H
#define ATTEST_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest.h"

static int failures = 0;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);       \
      failures++;                                                                    \
    }                                                                                \
  } while (0)

/* Checks a result code; on mismatch prints both codes and the verifier's detailed error. */
#define CHECK_RC(v, expr, want) check_rc((v), (expr), (want), #expr, __FILE__, __LINE__)

static inline void check_rc(const attest_verifier *v, attest_result got, attest_result want, const char *what,
                     const char *file, int line) {
  if (got == want) return;
  char msg[1024];
  size_t n = 0;
  if (v == NULL || attest_verifier_last_error(v, msg, sizeof msg, &n) != ATTEST_RESULT_OK) n = 0;
  fprintf(stderr, "%s:%d: %s returned %u, want %u (%.*s)\n", file, line, what, got, want, (int)n, msg);
  failures++;
}

static inline const char *testdata_dir(void) {
  const char *d = getenv("ATTEST_TESTDATA");
  return d ? d : "../shared/testdata";
}

/* Returns 1 when the testdata directory exists; otherwise prints a NOTICE and returns 0 (exits 1 under
 * CI=true, where the vectors are required). */
static inline int have_testdata(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/INDEX.md", testdata_dir());
  FILE *f = fopen(path, "rb");
  if (f) {
    fclose(f);
    return 1;
  }
  const char *ci = getenv("CI");
  if (ci && strcmp(ci, "true") == 0) {
    fprintf(stderr, "testdata not found at %s (set ATTEST_TESTDATA); required under CI=true\n", testdata_dir());
    exit(1);
  }
  fprintf(stderr, "NOTICE: skipping real-evidence C tests: testdata not found at %s (set ATTEST_TESTDATA)\n",
          testdata_dir());
  return 0;
}

/* Reads a whole file (absolute path); aborts the test on error. Free the result. */
static inline uint8_t *read_path(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* Reads a testdata file by its path relative to the testdata directory. */
static inline uint8_t *read_vector(const char *rel, size_t *len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", testdata_dir(), rel);
  return read_path(path, len);
}

/* Decodes hex text (whitespace ignored) in place; returns the byte count. */
static inline size_t unhex(uint8_t *buf, size_t len) {
  size_t out = 0;
  int hi = -1;
  for (size_t i = 0; i < len; i++) {
    int c = buf[i], v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else continue;
    if (hi < 0) hi = v;
    else {
      buf[out++] = (uint8_t)(hi << 4 | v);
      hi = -1;
    }
  }
  return out;
}

/* Azure's bincode quote bundle: u64-LE length + signature, u64-LE length + TPMS_ATTEST, u64-LE count +
 * 32-byte SHA-256 PCRs. Pointers into `b`. */
typedef struct {
  const uint8_t *sig;
  size_t sig_len;
  const uint8_t *attest;
  size_t attest_len;
  attest_pcr_value pcrs[24];
  size_t pcr_count;
} bincode_quote;

static inline uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static inline void parse_bincode(const uint8_t *b, size_t len, bincode_quote *q) {
  size_t pos = 0;
  q->sig_len = (size_t)le64(b + pos);
  pos += 8;
  q->sig = b + pos;
  pos += q->sig_len;
  q->attest_len = (size_t)le64(b + pos);
  pos += 8;
  q->attest = b + pos;
  pos += q->attest_len;
  size_t n = (size_t)le64(b + pos);
  pos += 8;
  if (n > 24 || pos + 32 * n > len) {
    fprintf(stderr, "bad bincode quote\n");
    exit(2);
  }
  q->pcr_count = n;
  for (size_t i = 0; i < n; i++) {
    memset(&q->pcrs[i], 0, sizeof q->pcrs[i]);
    q->pcrs[i].hash_alg = 0x000B;
    q->pcrs[i].index = (uint8_t)i;
    q->pcrs[i].value_len = 32;
    memcpy(q->pcrs[i].value, b + pos + 32 * i, 32);
  }
}

static inline int str_eq(attest_str s, const char *want) {
  return s.len == strlen(want) && memcmp(s.data, want, s.len) == 0;
}

static inline int finish(const char *name) {
  if (failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}

#endif
