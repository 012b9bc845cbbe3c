#define _GNU_SOURCE
/* Eight threads share one verifier: concurrent warm verifies, per-thread rejections and detailed errors,
 * and policy swaps while verifications run. */
#include <pthread.h>

#include "testutil.h"

#define THREADS 8
#define ROUNDS 25
#define REPORT_SIZE 0x4A0
#define T_2025_06_01 1748736000ull

static attest_verifier *shared;
static uint8_t *report, *vcek;
static size_t vcek_len;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int thread_failures = 0;

static void fail(int id, const char *what, attest_result rc) {
  pthread_mutex_lock(&lock);
  fprintf(stderr, "thread %d: %s (rc %u)\n", id, what, rc);
  thread_failures++;
  pthread_mutex_unlock(&lock);
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  uint8_t wrong[64];
  memset(wrong, id + 1, sizeof wrong);
  char msg[512];
  size_t n;
  for (int i = 0; i < ROUNDS; i++) {
    attest_verdict *vd = NULL;
    attest_result rc;
    if ((i + id) % 5 == 0) {
      /* A rejection on this thread: the detailed error is this thread's own. */
      rc = attest_verifier_verify_snp(shared, report, REPORT_SIZE, vcek, vcek_len, NULL, 0, wrong, 64, T_2025_06_01, &vd);
      if (rc != ATTEST_RESULT_POLICY_REPORT_DATA || vd != NULL) fail(id, "rejection", rc);
      n = 0;
      rc = attest_verifier_last_error(shared, msg, sizeof msg, &n);
      if (rc != ATTEST_RESULT_OK || n == 0 || memmem(msg, n, "report_data", 11) == NULL) fail(id, "last error", rc);
    } else {
      rc = attest_verifier_verify_snp(shared, report, REPORT_SIZE, vcek, vcek_len, NULL, 0, NULL, 0, T_2025_06_01, &vd);
      if (rc != ATTEST_RESULT_OK || vd == NULL) {
        fail(id, "accept", rc);
        continue;
      }
      attest_bytes b;
      if (attest_verdict_measurement(vd, &b) != ATTEST_RESULT_OK || b.len != 48 || memcmp(b.data, report + 0x90, 48))
        fail(id, "measurement", 0);
      attest_verdict_free(vd);
      /* Other threads' failures never show up here. */
      n = 1;
      rc = attest_verifier_last_error(shared, msg, sizeof msg, &n);
      if (rc != ATTEST_RESULT_OK || n != 0) fail(id, "last error not cleared", rc);
    }
    if (id == 0 && i % 5 == 0) {
      rc = attest_verifier_set_policy_json(shared, (const uint8_t *)"{}", 2);
      if (rc != ATTEST_RESULT_OK) fail(id, "policy swap", rc);
    }
  }
  return NULL;
}

int main(void) {
  if (!have_testdata()) return finish("threads");
  size_t rlen;
  report = read_vector("constellation-azure-snp/attestation.bin", &rlen);
  vcek = read_vector("constellation-azure-snp/vcek.cert", &vcek_len);
  CHECK_RC(NULL, attest_verifier_new(&shared), ATTEST_RESULT_OK);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
  failures += thread_failures;
  /* After the first verification the chain comes from the cache. */
  attest_verdict *vd = NULL;
  CHECK_RC(shared, attest_verifier_verify_snp(shared, report, REPORT_SIZE, vcek, vcek_len, NULL, 0, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_OK);
  CHECK(attest_verdict_cache_hit(vd));
  attest_verdict_free(vd);
  attest_verifier_free(shared);
  free(report);
  free(vcek);
  return finish("threads");
}
