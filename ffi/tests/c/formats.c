#define _GNU_SOURCE
/* Evidence in other tools' formats through the C API: GCE attestations (go-tpm-tools protobuf, Google's
 * roots), Azure SNP vTPM evidence in trustee's JSON layouts, TPM quotes as trustee JSON and az-cvm-vtpm
 * bincode; the GCE policy; and the result codes of the engine errors these verifiers raise. Real vectors
 * from $ATTEST_TESTDATA; every accepted input also gets a tampered copy, which must be refused. */
#include "testutil.h"

#define T_2025_06_01 1748736000ull

static attest_verifier *new_verifier(void) {
  attest_verifier *v = NULL;
  CHECK_RC(NULL, attest_verifier_new(&v), ATTEST_RESULT_OK);
  return v;
}

static attest_outcome outcome_of(const attest_verdict *vd, const char *name) {
  attest_outcome o = 99;
  if (attest_verdict_check_outcome(vd, (const uint8_t *)name, strlen(name), &o) != ATTEST_RESULT_OK) return 99;
  return o;
}

static void gce(void) {
  size_t len;
  uint8_t *att = read_vector("go-tpm-tools/gce-cos-85-no-nonce.pb", &len);
  attest_verifier *v = new_verifier();
  attest_verdict *vd = NULL;

  /* The attestation was made without a nonce: refused unless the caller says so. */
  CHECK_RC(v, attest_verifier_verify_gce(v, att, len, NULL, 0, T_2025_06_01, 0, &vd), ATTEST_RESULT_NONCE_REQUIRED);
  CHECK(vd == NULL);
  CHECK_RC(v, attest_verifier_verify_gce(v, att, len, NULL, 0, T_2025_06_01, ATTEST_VERIFY_ALLOW_EMPTY_NONCE, &vd),
           ATTEST_RESULT_OK);
  if (vd) {
    attest_gce_instance inst;
    attest_bytes b;
    CHECK(attest_verdict_kind(vd) == ATTEST_EVIDENCE_KIND_GCE);
    CHECK(attest_verdict_gce_instance(vd, &inst) == ATTEST_RESULT_OK);
    CHECK(str_eq(inst.zone, "us-central1-a") && str_eq(inst.instance_name, "cos-test"));
    CHECK(inst.project_number == 117478743145ull);
    CHECK(outcome_of(vd, "nonce") == ATTEST_OUTCOME_WAIVED);
    CHECK(outcome_of(vd, "ak_certificate_chain") == ATTEST_OUTCOME_PASSED);
    CHECK(outcome_of(vd, "event_log_replay") == ATTEST_OUTCOME_PASSED);
    /* SHA-256 PCR 0 of the README. */
    CHECK(attest_verdict_pcr(vd, 0, &b) == ATTEST_RESULT_OK && b.len == 32 && b.data[0] == 0x0f && b.data[1] == 0x35);
    CHECK(attest_verdict_measurement(vd, &b) == ATTEST_RESULT_NOT_AVAILABLE);
    attest_verdict_free(vd);
    vd = NULL;
  }
  /* Any nonce fails (upstream's negative), with the TPM nonce code. */
  CHECK_RC(v, attest_verifier_verify_gce(v, att, len, (const uint8_t *)"9009", 4, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_NONCE_MISMATCH);
  /* A byte of the first quote's TPMS_ATTEST (it starts at offset 288): the signature no longer verifies. */
  att[288 + 50] ^= 1;
  CHECK_RC(v, attest_verifier_verify_gce(v, att, len, NULL, 0, T_2025_06_01, ATTEST_VERIFY_ALLOW_EMPTY_NONCE, &vd),
           ATTEST_RESULT_QUOTE_SIGNATURE_INVALID);
  att[288 + 50] ^= 1;
  /* Not a protobuf at all. */
  CHECK_RC(v, attest_verifier_verify_gce(v, (const uint8_t *)"\xff\xff\xff", 3, NULL, 0, T_2025_06_01,
                                         ATTEST_VERIFY_ALLOW_EMPTY_NONCE, &vd),
           ATTEST_RESULT_EVIDENCE_FORMAT);

  /* The GCE policy: a project allow-list without this project is a platform policy failure. */
  const char *projects = "{\"allowed_projects\": [\"another-project\"]}";
  CHECK_RC(v, attest_verifier_set_gce_policy_json(v, (const uint8_t *)projects, strlen(projects)), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_gce(v, att, len, NULL, 0, T_2025_06_01, ATTEST_VERIFY_ALLOW_EMPTY_NONCE, &vd),
           ATTEST_RESULT_PLATFORM_POLICY);
  const char *bad = "{\"allow_everything\": true}";
  CHECK_RC(v, attest_verifier_set_gce_policy_json(v, (const uint8_t *)bad, strlen(bad)), ATTEST_RESULT_POLICY_FILE);
  CHECK(vd == NULL);
  attest_verifier_free(v);
  free(att);
}

static void azure_json(void) {
  static const char *FILES[] = {"trustee-az-snp-vtpm/evidence-v0.json", "trustee-az-snp-vtpm/evidence-v1.json"};
  attest_verifier *v = new_verifier();
  attest_verdict *vd = NULL;
  for (size_t i = 0; i < 2; i++) {
    size_t len;
    uint8_t *json = read_vector(FILES[i], &len);
    CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"challenge", 9, NULL, 0,
                                                      T_2025_06_01, 0, &vd),
             ATTEST_RESULT_OK);
    if (vd) {
      CHECK(attest_verdict_kind(vd) == ATTEST_EVIDENCE_KIND_AZURE_SNP);
      CHECK(outcome_of(vd, "ak_binding") == ATTEST_OUTCOME_PASSED);
      CHECK(outcome_of(vd, "user_data") == ATTEST_OUTCOME_WAIVED);
      attest_bytes b;
      CHECK(attest_verdict_pcr(vd, 0, &b) == ATTEST_RESULT_OK && b.data[0] == 0xe1 && b.data[1] == 0x5c);
      attest_verdict_free(vd);
      vd = NULL;
    }
    /* Another nonce. */
    CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"egnellahc", 9, NULL, 0,
                                                      T_2025_06_01, 0, &vd),
             ATTEST_RESULT_NONCE_MISMATCH);
    /* A user-data of the wrong length, and an unknown flag. */
    CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"challenge", 9,
                                                      (const uint8_t *)"short", 5, T_2025_06_01, 0, &vd),
             ATTEST_RESULT_INVALID_PARAMETER);
    CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"challenge", 9, NULL, 0,
                                                      T_2025_06_01, 0x80, &vd),
             ATTEST_RESULT_INVALID_PARAMETER);
    free(json);
  }
  /* v1 with PCR 0 of the quote changed: the quote's digest no longer matches. */
  size_t len;
  uint8_t *json = read_vector("trustee-az-snp-vtpm/evidence-v1.json", &len);
  char *pcr0 = memmem(json, len, "e15c44796beabf46", 16);
  CHECK(pcr0 != NULL);
  if (pcr0) {
    *pcr0 = 'f';
    CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"challenge", 9, NULL, 0,
                                                      T_2025_06_01, 0, &vd),
             ATTEST_RESULT_PCR_DIGEST_MISMATCH);
  }
  free(json);
  /* v2 evidence (no real vector: v1 with its unsigned envelope's version set to 2, which the parser accepts
   * and nothing signs) without user_data: a usage error before anything is verified, naming the parameter
   * and the flag; with the waiver it verifies (user_data waived); with 64 other bytes it is refused. */
  json = read_vector("trustee-az-snp-vtpm/evidence-v1.json", &len);
  char *version = memmem(json, len, "\"version\": 1,", 13);
  CHECK(version != NULL);
  if (version) {
    version[11] = '2';
    CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"challenge", 9, NULL, 0,
                                                      T_2025_06_01, 0, &vd),
             ATTEST_RESULT_INVALID_PARAMETER);
    char msg[1024];
    size_t n = 0;
    CHECK(attest_verifier_last_error(v, msg, sizeof msg, &n) == ATTEST_RESULT_OK);
    CHECK(memmem(msg, n, "v2 evidence", 11) && memmem(msg, n, "user_data", 9) &&
          memmem(msg, n, "ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA", 40));
    CHECK(!memmem(msg, n, "::", 2) && !memmem(msg, n, "UserData", 8));
    CHECK(attest_verifier_last_result_json(v, msg, sizeof msg, &n) == ATTEST_RESULT_OK && n == 0);
    CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"challenge", 9, NULL, 0,
                                                      T_2025_06_01, ATTEST_VERIFY_DANGEROUS_IGNORE_USER_DATA, &vd),
             ATTEST_RESULT_OK);
    if (vd) {
      CHECK(outcome_of(vd, "user_data") == ATTEST_OUTCOME_WAIVED);
      attest_verdict_free(vd);
      vd = NULL;
    }
    uint8_t other[64];
    memset(other, 0x11, sizeof other);
    CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"challenge", 9, other, 64,
                                                      T_2025_06_01, 0, &vd),
             ATTEST_RESULT_RUNTIME_USER_DATA_MISMATCH);
  }
  free(json);
  /* Azure TDX evidence is not SNP evidence. */
  json = read_vector("trustee-az-tdx-vtpm/evidence-v1.json", &len);
  CHECK_RC(v, attest_verifier_verify_azure_evidence(v, json, len, (const uint8_t *)"challenge", 9, NULL, 0,
                                                    T_2025_06_01, 0, &vd),
           ATTEST_RESULT_INVALID_PARAMETER);
  free(json);
  /* Not one of trustee's layouts. */
  const char *other = "{\"version\": 7}";
  CHECK_RC(v, attest_verifier_verify_azure_evidence(v, (const uint8_t *)other, strlen(other), (const uint8_t *)"c",
                                                    1, NULL, 0, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_EVIDENCE_FORMAT);
  CHECK(vd == NULL);
  attest_verifier_free(v);
}

static void tpm_formats(void) {
  static const uint8_t TRUSTEE_NONCE[64] = {
      0xa0, 0x41, 0x82, 0xb5, 0x06, 0x87, 0x8d, 0x4f, 0x29, 0xb9, 0x1e, 0xe6, 0x06, 0xa7, 0x1a, 0x0d,
      0x33, 0x61, 0xcc, 0xf1, 0xb2, 0x2d, 0xb2, 0x0c, 0x98, 0xad, 0xca, 0xa5, 0x37, 0xbe, 0xa3, 0x93,
      0xef, 0x0e, 0x41, 0xa1, 0x8b, 0x35, 0x69, 0xab, 0x67, 0x8f, 0x14, 0x97, 0xfb, 0xc5, 0xc1, 0x20};
  attest_verifier *v = new_verifier();
  attest_verdict *vd = NULL;
  size_t jlen, qlen, klen;
  uint8_t *json = read_vector("trustee-tpm/tpm_evidence.json", &jlen);
  CHECK_RC(v, attest_verifier_verify_tpm_evidence(v, ATTEST_TPM_EVIDENCE_TRUSTEE_JSON, json, jlen, NULL, 0,
                                                  TRUSTEE_NONCE, 64, 0, &vd),
           ATTEST_RESULT_OK);
  if (vd) {
    CHECK(attest_verdict_kind(vd) == ATTEST_EVIDENCE_KIND_TPM_QUOTE);
    CHECK(outcome_of(vd, "tpm_pcr_digest") == ATTEST_OUTCOME_PASSED);
    attest_verdict_free(vd);
    vd = NULL;
  }
  /* The evidence carries its AK: passing one is a caller mistake. */
  CHECK_RC(v, attest_verifier_verify_tpm_evidence(v, ATTEST_TPM_EVIDENCE_TRUSTEE_JSON, json, jlen, json, 1,
                                                  TRUSTEE_NONCE, 64, 0, &vd),
           ATTEST_RESULT_INVALID_PARAMETER);
  free(json);

  uint8_t *quote = read_vector("azure-cvm-tooling/quote.bin", &qlen);
  uint8_t *ak = read_vector("azure-cvm-tooling/akpub.pem", &klen);
  CHECK_RC(v, attest_verifier_verify_tpm_evidence(v, ATTEST_TPM_EVIDENCE_AZ_CVM_VTPM_BINCODE, quote, qlen, ak, klen,
                                                  (const uint8_t *)"challenge", 9, 0, &vd),
           ATTEST_RESULT_OK);
  if (vd) {
    attest_verdict_free(vd);
    vd = NULL;
  }
  /* No AK; a tampered signature; an unknown format. */
  CHECK_RC(v, attest_verifier_verify_tpm_evidence(v, ATTEST_TPM_EVIDENCE_AZ_CVM_VTPM_BINCODE, quote, qlen, NULL, 0,
                                                  (const uint8_t *)"challenge", 9, 0, &vd),
           ATTEST_RESULT_INVALID_PARAMETER);
  quote[40] ^= 1;
  CHECK_RC(v, attest_verifier_verify_tpm_evidence(v, ATTEST_TPM_EVIDENCE_AZ_CVM_VTPM_BINCODE, quote, qlen, ak, klen,
                                                  (const uint8_t *)"challenge", 9, 0, &vd),
           ATTEST_RESULT_QUOTE_SIGNATURE_INVALID);
  CHECK_RC(v, attest_verifier_verify_tpm_evidence(v, 9, quote, qlen, ak, klen, (const uint8_t *)"c", 1, 0, &vd),
           ATTEST_RESULT_INVALID_PARAMETER);
  /* Malformed hex JSON. */
  const char *hexq = "{\"signature\": \"zz\", \"message\": \"00\", \"pcrs\": []}";
  CHECK_RC(v, attest_verifier_verify_tpm_evidence(v, ATTEST_TPM_EVIDENCE_HEX_JSON, (const uint8_t *)hexq,
                                                  strlen(hexq), ak, klen, (const uint8_t *)"c", 1, 0, &vd),
           ATTEST_RESULT_EVIDENCE_FORMAT);
  CHECK(vd == NULL);
  free(quote);
  free(ak);
  attest_verifier_free(v);
}

static void result_codes(void) {
  static const struct {
    attest_result code;
    bool (*is)(uint32_t);
  } CODES[] = {
      {ATTEST_RESULT_QUALIFIED_SIGNER_MISMATCH, attest_result_is_tpm_error},
      {ATTEST_RESULT_PLATFORM_POLICY, attest_result_is_policy_error},
      {ATTEST_RESULT_GCE_INSTANCE_INFO, attest_result_is_variant_error},
      {ATTEST_RESULT_AK_CERTIFICATE_KEY_MISMATCH, attest_result_is_variant_error},
      {ATTEST_RESULT_RUNTIME_USER_DATA_MISMATCH, attest_result_is_variant_error},
      {ATTEST_RESULT_EVIDENCE_FORMAT, attest_result_is_encoding_error},
  };
  for (size_t i = 0; i < sizeof CODES / sizeof CODES[0]; i++) {
    char buf[256];
    size_t n = 0;
    CHECK(attest_result_text(CODES[i].code, buf, sizeof buf, &n) == ATTEST_RESULT_OK && n > 0);
    CHECK(strncmp(buf, "unknown", 7) != 0);
    CHECK(CODES[i].is(CODES[i].code));
    CHECK(attest_result_is_evidence_error(CODES[i].code));
  }
}

int main(void) {
  result_codes();
  if (have_testdata()) {
    gce();
    azure_json();
    tpm_formats();
  }
  return finish("formats");
}
