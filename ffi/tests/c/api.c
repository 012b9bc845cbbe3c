/* API conventions without evidence: NULL arguments, buffers, result codes and their classification. */
#include "testutil.h"

static void text_buffers(void) {
  char buf[256];
  size_t n = 12345;
  /* A code's text. */
  CHECK_RC(NULL, attest_result_text(ATTEST_RESULT_CERT_EXPIRED, buf, sizeof buf, &n), ATTEST_RESULT_OK);
  CHECK(n == strlen("certificate expired") && memcmp(buf, "certificate expired", n) == 0);
  /* Size query and undersized buffers: out_n reports the size needed, the buffer is untouched. */
  n = 0;
  CHECK_RC(NULL, attest_result_text(ATTEST_RESULT_CERT_EXPIRED, NULL, 0, &n), ATTEST_RESULT_INSUFFICIENT_SIZE);
  CHECK(n == strlen("certificate expired"));
  memset(buf, 'x', sizeof buf);
  n = 0;
  CHECK_RC(NULL, attest_result_text(ATTEST_RESULT_CERT_EXPIRED, buf, 5, &n), ATTEST_RESULT_INSUFFICIENT_SIZE);
  CHECK(n == strlen("certificate expired"));
  CHECK(buf[0] == 'x');
  /* Exactly the needed size works. */
  CHECK_RC(NULL, attest_result_text(ATTEST_RESULT_CERT_EXPIRED, buf, strlen("certificate expired"), &n),
           ATTEST_RESULT_OK);
  /* Unknown codes have text too; NULL out_n or NULL buf with a length are NULL_PARAMETER. */
  CHECK_RC(NULL, attest_result_text(424242, buf, sizeof buf, &n), ATTEST_RESULT_OK);
  CHECK(n == strlen("unknown result code"));
  CHECK_RC(NULL, attest_result_text(0, buf, sizeof buf, NULL), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_result_text(0, NULL, 10, &n), ATTEST_RESULT_NULL_PARAMETER);
}

static void classification(void) {
  CHECK(!attest_result_is_api_error(ATTEST_RESULT_OK));
  CHECK(attest_result_is_api_error(ATTEST_RESULT_NULL_PARAMETER));
  CHECK(attest_result_is_api_error(ATTEST_RESULT_PANIC));
  CHECK(attest_result_is_snp_error(ATTEST_RESULT_REPORT_SIGNATURE_INVALID));
  CHECK(attest_result_is_x509_error(ATTEST_RESULT_CERT_EXPIRED));
  CHECK(attest_result_is_tpm_error(ATTEST_RESULT_NONCE_MISMATCH));
  CHECK(attest_result_is_policy_error(ATTEST_RESULT_POLICY_DEBUG));
  CHECK(attest_result_is_variant_error(ATTEST_RESULT_PCR_MISMATCH));
  CHECK(attest_result_is_encoding_error(ATTEST_RESULT_TRUNCATED));
  CHECK(attest_result_is_evidence_error(ATTEST_RESULT_CHIP_ID_MISMATCH));
  CHECK(!attest_result_is_evidence_error(ATTEST_RESULT_INVALID_PARAMETER));
  /* The loaded library speaks the ABI this program was compiled against. */
  CHECK(attest_abi_version() == ATTEST_ABI_VERSION);
  CHECK((attest_abi_version() >> 16) == ATTEST_ABI_VERSION_MAJOR);
  CHECK((attest_abi_version() & 0xffff) >= ATTEST_ABI_VERSION_MINOR);
  /* Pinned numbers (the wire contract with C and Go callers). */
  CHECK(ATTEST_RESULT_OK == 0 && ATTEST_RESULT_NULL_PARAMETER == 1001 && ATTEST_RESULT_INSUFFICIENT_SIZE == 1003);
  CHECK(ATTEST_RESULT_REPORT_SIGNATURE_INVALID == 2005 && ATTEST_RESULT_CERT_EXPIRED == 3010);
  CHECK(ATTEST_RESULT_NONCE_MISMATCH == 4006 && ATTEST_RESULT_POLICY_MEASUREMENT == 5112);
  CHECK(ATTEST_RESULT_PCR_MISMATCH == 6006 && ATTEST_RESULT_TRUNCATED == 7001);
}

static void null_arguments(void) {
  attest_verifier *v = NULL;
  attest_verdict *verdict = (attest_verdict *)0x1; /* must stay untouched on failure */
  uint8_t b[8] = {0};
  char buf[64];
  size_t n = 0;

  CHECK_RC(NULL, attest_verifier_new(NULL), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verifier_new(&v), ATTEST_RESULT_OK);
  CHECK(v != NULL);
  attest_verifier_free(NULL);
  attest_verdict_free(NULL);

  /* NULL verifier, NULL required inputs, NULL inputs with a length, NULL out. */
  CHECK_RC(NULL, attest_verifier_verify_snp(NULL, b, 8, b, 8, NULL, 0, NULL, 0, 0, &verdict),
           ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_snp(v, NULL, 0, b, 8, NULL, 0, NULL, 0, 0, &verdict),
           ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_snp(v, b, 8, NULL, 3, NULL, 0, NULL, 0, 0, &verdict),
           ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_snp(v, b, 8, b, 8, NULL, 0, NULL, 0, 0, NULL), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, NULL, 0, b, 8, b, 8, 0, NULL, 0, NULL, 0, 0, &verdict),
           ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, b, 8, b, 8, b, 8, 0, NULL, 5, NULL, 0, 0, &verdict),
           ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_azure_snp(v, NULL, 0, b, 8, b, 8, b, 8, 1, NULL, 0, NULL, 0, 0, 0, &verdict),
           ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_document(v, NULL, 0, b, 8, b, 8, NULL, 0, 0, 0, &verdict),
           ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_set_policy_json(v, NULL, 0), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verifier_set_policy_json(NULL, b, 2), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_set_crl(v, NULL, 0), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_pin_ak(v, NULL, 0), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verifier_last_error(NULL, buf, sizeof buf, &n), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verifier_last_error(v, buf, sizeof buf, NULL), ATTEST_RESULT_NULL_PARAMETER);
  CHECK(verdict == (attest_verdict *)0x1);

  /* Verdict accessors on NULL. */
  attest_bytes bytes;
  attest_str s;
  attest_tcb tcb;
  attest_outcome o;
  CHECK(!attest_verdict_accepted(NULL));
  CHECK(attest_verdict_kind(NULL) == 0);
  CHECK(attest_verdict_check_count(NULL) == 0);
  CHECK(!attest_verdict_cache_hit(NULL));
  CHECK_RC(NULL, attest_verdict_check(NULL, 0, &s, &o), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verdict_measurement(NULL, &bytes), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verdict_report_data(NULL, &bytes), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verdict_reported_tcb(NULL, &tcb), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verdict_product(NULL, &s), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(NULL, attest_verdict_pcr(NULL, 0, &bytes), ATTEST_RESULT_NULL_PARAMETER);

  /* Invalid (not NULL) arguments: a short report, bad JSON, an unknown signature format. */
  /* A short report (the DER-looking leaf is not parsed before the report). */
  uint8_t der[4] = {0x30, 0x02, 0x05, 0x00};
  CHECK_RC(v, attest_verifier_verify_snp(v, b, 8, der, 4, NULL, 0, NULL, 0, 0, &verdict), ATTEST_RESULT_TRUNCATED);
  /* A leaf that is neither DER nor PEM. */
  CHECK_RC(v, attest_verifier_verify_snp(v, b, 8, b, 8, NULL, 0, NULL, 0, 0, &verdict), ATTEST_RESULT_PEM);
  n = 0;
  CHECK_RC(v, attest_verifier_last_error(v, buf, sizeof buf, &n), ATTEST_RESULT_OK);
  CHECK(n > 0);
  /* The detailed error with an undersized buffer: out_n is the size needed. */
  size_t need = n;
  CHECK_RC(v, attest_verifier_last_error(v, buf, 3, &n), ATTEST_RESULT_INSUFFICIENT_SIZE);
  CHECK(n == need);
  CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)"{\"nope\":1}", 10), ATTEST_RESULT_POLICY_FILE);
  CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)"{}", 2), ATTEST_RESULT_OK);
  /* A success clears this thread's detailed error. */
  CHECK_RC(v, attest_verifier_last_error(v, buf, sizeof buf, &n), ATTEST_RESULT_OK);
  CHECK(n == 0);
  /* Eight zero bytes are no TPM2B_PUBLIC: an encoding/TPM error, never OK. */
  attest_result rc = attest_verifier_verify_tpm_quote(v, b, 8, b, 8, b, 8, 0, NULL, 0, NULL, 0,
                                                      ATTEST_VERIFY_ALLOW_EMPTY_NONCE, &verdict);
  CHECK(attest_result_is_evidence_error(rc));
  /* An empty nonce is refused unless the caller says so; unknown flag bits are invalid. */
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, b, 8, b, 8, b, 8, 0, NULL, 0, NULL, 0, 0, &verdict),
           ATTEST_RESULT_NONCE_REQUIRED);
  CHECK(attest_result_is_api_error(ATTEST_RESULT_NONCE_REQUIRED));
  CHECK_RC(v, attest_verifier_verify_azure_snp(v, b, 8, b, 8, b, 8, b, 8, 1, NULL, 0, NULL, 0, 0, 0, &verdict),
           ATTEST_RESULT_NONCE_REQUIRED);
  CHECK_RC(v, attest_verifier_verify_document(v, (const uint8_t *)"qemu-vtpm", 9, b, 8, b, 8, NULL, 0, 0, 0, &verdict),
           ATTEST_RESULT_NONCE_REQUIRED);
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, b, 8, b, 8, b, 8, 0, NULL, 0, b, 8, 2, &verdict),
           ATTEST_RESULT_INVALID_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_document(v, (const uint8_t *)"qemu-vtpm", 9, b, 8, b, 8, b, 8, 0, 0x80000001u,
                                              &verdict),
           ATTEST_RESULT_INVALID_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_document(v, (const uint8_t *)"nope", 4, b, 8, b, 8, b, 8, 0, 0, &verdict),
           ATTEST_RESULT_UNSUPPORTED_VARIANT);
  CHECK_RC(v, attest_verifier_set_crl(v, b, 8), ATTEST_RESULT_PEM);
  CHECK(verdict == (attest_verdict *)0x1);
  CHECK(strncmp(attest_version(), "attest-ffi ", 11) == 0);
  attest_verifier_free(v);
}

int main(void) {
  text_buffers();
  classification();
  null_arguments();
  return finish("api");
}
