#define _GNU_SOURCE
/* Real evidence from $ATTEST_TESTDATA through the C API: accepts, rejections with their codes, the
 * certificate cache, TPM quotes, Azure bundles; and generated attestation documents from
 * $ATTEST_FFI_FIXTURES (written by ffi/tests/c.rs). */
#include "testutil.h"

#define T_2022_09_23 1663891200ull
#define T_2022_09_24_01 1663981200ull
#define T_2024_01_01 1704067200ull
#define T_2025_01_01 1735689600ull
#define T_2025_06_01 1748736000ull
#define T_2026_01_01 1767225600ull
#define REPORT_SIZE 0x4A0

static const char *LENIENT = "{\"allow_provisional_firmware\": true}";

static attest_verifier *new_verifier(const char *policy) {
  attest_verifier *v = NULL;
  CHECK_RC(NULL, attest_verifier_new(&v), ATTEST_RESULT_OK);
  if (policy) CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)policy, strlen(policy)), ATTEST_RESULT_OK);
  return v;
}

static attest_outcome outcome_of(const attest_verdict *vd, const char *name) {
  attest_outcome o = 99;
  if (attest_verdict_check_outcome(vd, (const uint8_t *)name, strlen(name), &o) != ATTEST_RESULT_OK) return 99;
  return o;
}

/* SHA-256(runtimedata.bin) ‖ 32 zero bytes: the REPORT_DATA Azure's paravisor puts in the report. */
static const uint8_t AZURE_RD[64] = {0x0c, 0xcc, 0x08, 0x95, 0xef, 0x2f, 0x2c, 0x3b, 0x8c, 0x85, 0x68,
                                     0xf5, 0xa2, 0xbb, 0x65, 0xff, 0x5b, 0xf9, 0x38, 0x7a, 0x09, 0x35,
                                     0x97, 0x42, 0xad, 0x41, 0xe6, 0x86, 0xca, 0xcf, 0xd3, 0x8b};

static void constellation_azure_milan(void) {
  size_t rlen, vlen, plen, clen;
  uint8_t *report = read_vector("constellation-azure-snp/attestation.bin", &rlen);
  uint8_t *vcek = read_vector("constellation-azure-snp/vcek.cert", &vlen);
  uint8_t *vcek_pem = read_vector("constellation-azure-snp/vcek.pem", &plen);
  uint8_t *chain = read_vector("constellation-azure-snp/certchain.pem", &clen);
  attest_verifier *v = new_verifier(NULL);
  attest_verdict *vd = NULL;

  /* Accept: DER VCEK, PEM chain, expected REPORT_DATA. */
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, chain, clen, AZURE_RD, 64, T_2025_06_01, &vd),
           ATTEST_RESULT_OK);
  if (vd) {
    attest_str s;
    attest_tcb tcb;
    attest_bytes b;
    CHECK(attest_verdict_accepted(vd));
    CHECK(attest_verdict_kind(vd) == ATTEST_EVIDENCE_KIND_SNP);
    CHECK(attest_verdict_product(vd, &s) == ATTEST_RESULT_OK && str_eq(s, "Milan"));
    CHECK(attest_verdict_signer(vd, &s) == ATTEST_RESULT_OK && str_eq(s, "VCEK"));
    CHECK(attest_verdict_reported_tcb(vd, &tcb) == ATTEST_RESULT_OK);
    CHECK(tcb.bootloader == 2 && tcb.tee == 0 && tcb.snp == 6 && tcb.microcode == 93 && !tcb.has_fmc);
    CHECK(attest_verdict_report_data(vd, &b) == ATTEST_RESULT_OK && b.len == 64 && memcmp(b.data, AZURE_RD, 64) == 0);
    CHECK(attest_verdict_measurement(vd, &b) == ATTEST_RESULT_OK && b.len == 48 && b.data[0] == 0x56 && b.data[1] == 0x77);
    CHECK(attest_verdict_snp_report(vd, &b) == ATTEST_RESULT_OK && b.len == REPORT_SIZE && memcmp(b.data, report, REPORT_SIZE) == 0);
    CHECK(!attest_verdict_cache_hit(vd));
    CHECK(outcome_of(vd, "report_signature") == ATTEST_OUTCOME_PASSED);
    CHECK(outcome_of(vd, "report_data") == ATTEST_OUTCOME_PASSED);
    CHECK(outcome_of(vd, "measurement") == ATTEST_OUTCOME_WAIVED);
    CHECK(outcome_of(vd, "no_such_check") == 99);
    size_t count = attest_verdict_check_count(vd);
    CHECK(count >= 30);
    for (size_t i = 0; i < count; i++) {
      attest_outcome o;
      CHECK(attest_verdict_check(vd, i, &s, &o) == ATTEST_RESULT_OK && s.len > 0 && o != ATTEST_OUTCOME_NOT_RUN);
    }
    CHECK(attest_verdict_check(vd, count, &s, &(attest_outcome){0}) == ATTEST_RESULT_NOT_AVAILABLE);
    /* All checks in one call: size query, undersized array (untouched), exact size. */
    size_t needed = 0;
    CHECK(attest_verdict_checks(vd, NULL, 0, &needed) == ATTEST_RESULT_INSUFFICIENT_SIZE && needed == count);
    attest_check few[2] = {{{NULL, 0}, 99}, {{NULL, 0}, 99}};
    CHECK(attest_verdict_checks(vd, few, 2, &needed) == ATTEST_RESULT_INSUFFICIENT_SIZE && needed == count);
    CHECK(few[0].outcome == 99 && few[0].name.data == NULL);
    attest_check *all = calloc(count, sizeof *all);
    CHECK(attest_verdict_checks(vd, all, count, &needed) == ATTEST_RESULT_OK && needed == count);
    for (size_t i = 0; i < count; i++) {
      attest_outcome o;
      CHECK(attest_verdict_check(vd, i, &s, &o) == ATTEST_RESULT_OK && s.data == all[i].name.data && o == all[i].outcome);
    }
    free(all);
    CHECK(attest_verdict_checks(vd, NULL, 3, &needed) == ATTEST_RESULT_NULL_PARAMETER);
    CHECK(attest_verdict_pcr(vd, 0, &b) == ATTEST_RESULT_NOT_AVAILABLE);
    CHECK(attest_verdict_variant(vd, &s) == ATTEST_RESULT_NOT_AVAILABLE);
    attest_verdict_free(vd);
    vd = NULL;
  }
  /* Warm: same VCEK (PEM this time, same certificate) hits the verified-chain cache. */
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek_pem, plen, NULL, 0, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_OK);
  CHECK(attest_verdict_cache_hit(vd));
  attest_verdict_free(vd);
  vd = NULL;
  /* From the cache without any certificate. */
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, NULL, 0, NULL, 0, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_OK);
  attest_verdict_free(vd);
  vd = NULL;
  attest_verifier *fresh = new_verifier(NULL);
  CHECK_RC(fresh, attest_verifier_verify_snp(fresh, report, REPORT_SIZE, NULL, 0, NULL, 0, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_CERTIFICATE_NOT_CACHED);
  attest_verifier_free(fresh);

  /* Rejections: wrong nonce, wrong-length nonce, wrong measurement, report with trailing bytes. */
  uint8_t wrong[64];
  memset(wrong, 1, sizeof wrong);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, NULL, 0, wrong, 64, T_2025_06_01, &vd),
           ATTEST_RESULT_POLICY_REPORT_DATA);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, NULL, 0, wrong, 32, T_2025_06_01, &vd),
           ATTEST_RESULT_MISUSE);
  /* The refusal's result object (schema attest-result/1): the failed check and its policy key. */
  {
    char json[4096];
    size_t n = 0;
    CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, NULL, 0, wrong, 64, T_2025_06_01, &vd),
             ATTEST_RESULT_POLICY_REPORT_DATA);
    CHECK_RC(v, attest_verifier_last_result_json(v, json, sizeof json - 1, &n), ATTEST_RESULT_OK);
    json[n] = 0;
    CHECK(strstr(json, "\"schema\":\"attest-result/1\"") && strstr(json, "\"accepted\":false"));
    CHECK(strstr(json, "\"check\":\"report_data\"") && strstr(json, "\"policy_key\":\"report_data\""));
    CHECK(strstr(json, "\"class\":\"refused\""));
  }
  /* As the CLI reads it: the file (report + its 20-byte IGVM request-data header) verifies; other trailing
   * bytes are malformed input. */
  CHECK(rlen == REPORT_SIZE + 20);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, rlen, vcek, vlen, NULL, 0, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_OK);
  {
    char json[8192];
    size_t n = 0;
    CHECK_RC(NULL, attest_verdict_json(vd, NULL, 0, &n), ATTEST_RESULT_INSUFFICIENT_SIZE);
    CHECK(n > 0 && n < sizeof json);
    CHECK_RC(NULL, attest_verdict_json(vd, json, sizeof json - 1, &n), ATTEST_RESULT_OK);
    json[n] = 0;
    CHECK(strstr(json, "\"accepted\":true") && strstr(json, "\"verifier\":\"snp\"") && strstr(json, "\"failure\":null"));
    size_t m = 0;
    CHECK_RC(v, attest_verifier_last_result_json(v, NULL, 0, &m), ATTEST_RESULT_INSUFFICIENT_SIZE);
    CHECK(m == n);
  }
  attest_verdict_free(vd);
  vd = NULL;
  uint8_t *padded = calloc(1, REPORT_SIZE + 7);
  memcpy(padded, report, REPORT_SIZE);
  CHECK_RC(v, attest_verifier_verify_snp(v, padded, REPORT_SIZE + 7, vcek, vlen, NULL, 0, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_TRAILING_DATA);
  free(padded);
  const char *want_m =
      "{\"measurements\": [\"5677f1de87289e7ad2c7e99c805d0468b1a9ccd83f0d245afa5242d405da4d5725852f8c6550564870e5f3206dfb1841\"]}";
  const char *other_m =
      "{\"measurements\": [\"0077f1de87289e7ad2c7e99c805d0468b1a9ccd83f0d245afa5242d405da4d5725852f8c6550564870e5f3206dfb1841\"]}";
  CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)want_m, strlen(want_m)), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, NULL, 0, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_OK);
  CHECK(outcome_of(vd, "measurement") == ATTEST_OUTCOME_PASSED);
  attest_verdict_free(vd);
  vd = NULL;
  CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)other_m, strlen(other_m)), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, NULL, 0, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_POLICY_MEASUREMENT);
  char msg[512];
  size_t n = 0;
  CHECK_RC(v, attest_verifier_last_error(v, msg, sizeof msg, &n), ATTEST_RESULT_OK);
  CHECK(n > 0 && memmem(msg, n, "measurement", 11) != NULL);
  CHECK(vd == NULL);

  attest_verifier_free(v);
  free(report);
  free(vcek);
  free(vcek_pem);
  free(chain);
}

static void virtee_milan(void) {
  size_t hlen, vlen;
  uint8_t *hex = read_vector("virtee-sev/report_milan.hex", &hlen);
  size_t rlen = unhex(hex, hlen);
  uint8_t *vcek = read_vector("virtee-sev/vcek_milan.der", &vlen);
  attest_verifier *v = new_verifier(NULL);
  attest_verdict *vd = NULL;
  CHECK(rlen == REPORT_SIZE);
  CHECK_RC(v, attest_verifier_verify_snp(v, hex, rlen, vcek, vlen, NULL, 0, NULL, 0, T_2025_01_01, &vd), ATTEST_RESULT_OK);
  attest_tcb tcb;
  CHECK(attest_verdict_reported_tcb(vd, &tcb) == ATTEST_RESULT_OK && tcb.bootloader == 3 && tcb.snp == 8 &&
        tcb.microcode == 115);
  attest_verdict_free(vd);
  vd = NULL;
  hex[21] ^= 0x80; /* upstream negative: a POLICY bit */
  CHECK_RC(v, attest_verifier_verify_snp(v, hex, rlen, vcek, vlen, NULL, 0, NULL, 0, T_2025_01_01, &vd),
           ATTEST_RESULT_REPORT_SIGNATURE_INVALID);
  hex[21] ^= 0x80;
  vcek[40] ^= 0xff; /* upstream negative: a corrupted VCEK */
  attest_result rc = attest_verifier_verify_snp(v, hex, rlen, vcek, vlen, NULL, 0, NULL, 0, T_2025_01_01, &vd);
  CHECK(rc != ATTEST_RESULT_OK && attest_result_is_evidence_error(rc));
  CHECK(vd == NULL);
  attest_verifier_free(v);
  free(hex);
  free(vcek);
}

static void go_sev_guest_debug(void) {
  size_t rlen, vlen;
  uint8_t *report = read_vector("go-sev-guest/attestation.bin", &rlen);
  uint8_t *vcek = read_vector("go-sev-guest/vcek.testcer", &vlen);
  attest_verifier *v = new_verifier(NULL);
  attest_verdict *vd = NULL;
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, NULL, 0, NULL, 0, T_2022_09_24_01, &vd),
           ATTEST_RESULT_POLICY_DEBUG);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, NULL, 0, NULL, 0, T_2022_09_23, &vd),
           ATTEST_RESULT_CERT_NOT_YET_VALID);
  const char *allow = "{\"allow_debug\": true}";
  CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)allow, strlen(allow)), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vcek, vlen, NULL, 0, NULL, 0, T_2022_09_24_01, &vd),
           ATTEST_RESULT_OK);
  attest_verdict_free(vd);
  attest_verifier_free(v);
  free(report);
  free(vcek);
}

static void aws_vlek(void) {
  size_t rlen, vlen, clen;
  uint8_t *report = read_vector("constellation-aws-snp/report.bin", &rlen);
  uint8_t *vlek = read_vector("constellation-aws-snp/vlek.pem", &vlen);
  uint8_t *chain = read_vector("constellation-aws-snp/certchain.pem", &clen);
  attest_verifier *v = new_verifier(LENIENT);
  attest_verdict *vd = NULL;
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vlek, vlen, chain, clen, NULL, 0, T_2026_01_01, &vd),
           ATTEST_RESULT_CERT_EXPIRED);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vlek, vlen, chain, clen, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_OK);
  attest_str s;
  CHECK(attest_verdict_signer(vd, &s) == ATTEST_RESULT_OK && str_eq(s, "VLEK"));
  CHECK(outcome_of(vd, "chip_id_binding") == ATTEST_OUTCOME_WAIVED);
  attest_verdict_free(vd);
  vd = NULL;
  /* The firmware is provisional: the default policy refuses it. */
  CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)"{}", 2), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vlek, vlen, chain, clen, NULL, 0, T_2025_06_01, &vd),
           ATTEST_RESULT_POLICY_PROVISIONAL_FIRMWARE);
  attest_verifier_free(v);
  free(report);
  free(vlek);
  free(chain);

  /* A VLEK report that does not verify under its VLEK. */
  report = read_vector("constellation-snp-vlek/vlek-report.bin", &rlen);
  vlek = read_vector("constellation-snp-vlek/vlek.pem", &vlen);
  chain = read_vector("constellation-snp-vlek/vlekcertchain.pem", &clen);
  v = new_verifier(LENIENT);
  CHECK_RC(v, attest_verifier_verify_snp(v, report, REPORT_SIZE, vlek, vlen, chain, clen, NULL, 0, T_2024_01_01, &vd),
           ATTEST_RESULT_REPORT_SIGNATURE_INVALID);
  attest_verifier_free(v);
  free(report);
  free(vlek);
  free(chain);
}

static void azure_cvm_tooling_chip_mismatch(void) {
  size_t hlen, clen;
  uint8_t *hcl = read_vector("azure-cvm-tooling/hcl-report-snp.bin", &hlen);
  uint8_t *certs = read_vector("azure-cvm-tooling/certs.pem", &clen);
  attest_verifier *v = new_verifier(LENIENT);
  attest_verdict *vd = NULL;
  /* The SNP report sits at offset 32 of the HCL report. */
  CHECK_RC(v, attest_verifier_verify_snp(v, hcl + 32, REPORT_SIZE, certs, clen, NULL, 0, NULL, 0, T_2025_01_01, &vd),
           ATTEST_RESULT_CHIP_ID_MISMATCH);
  attest_verifier_free(v);
  free(hcl);
  free(certs);
}

static void tpm_quote_azure(void) {
  size_t qlen, alen;
  uint8_t *raw = read_vector("azure-cvm-tooling/quote.bin", &qlen);
  uint8_t *ak = read_vector("azure-cvm-tooling/akpub.pem", &alen);
  bincode_quote q;
  parse_bincode(raw, qlen, &q);
  attest_verifier *v = new_verifier(NULL);
  attest_verdict *vd = NULL;
  const uint8_t *nonce = (const uint8_t *)"challenge";
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, ak, alen, q.attest, q.attest_len, q.sig, q.sig_len,
                                               ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count, nonce, 9, 0, &vd),
           ATTEST_RESULT_OK);
  attest_bytes b;
  static const uint8_t PCR0[4] = {0xf3, 0xa7, 0xe9, 0x9a};
  CHECK(attest_verdict_kind(vd) == ATTEST_EVIDENCE_KIND_TPM_QUOTE);
  CHECK(attest_verdict_pcr(vd, 0, &b) == ATTEST_RESULT_OK && b.len == 32 && memcmp(b.data, PCR0, 4) == 0);
  CHECK(attest_verdict_pcr(vd, 24, &b) == ATTEST_RESULT_NOT_AVAILABLE);
  CHECK(attest_verdict_measurement(vd, &b) == ATTEST_RESULT_NOT_AVAILABLE);
  CHECK(outcome_of(vd, "tpm_nonce") == ATTEST_OUTCOME_PASSED);
  attest_verdict_free(vd);
  vd = NULL;
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, ak, alen, q.attest, q.attest_len, q.sig, q.sig_len,
                                               ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count, nonce, 8, 0, &vd),
           ATTEST_RESULT_NONCE_MISMATCH);
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, ak, alen, q.attest, q.attest_len, q.sig, q.sig_len, 77, q.pcrs,
                                               q.pcr_count, nonce, 9, 0, &vd),
           ATTEST_RESULT_INVALID_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, ak, alen, q.attest, q.attest_len, q.sig, q.sig_len,
                                               ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, 23, nonce, 9, 0, &vd),
           ATTEST_RESULT_PCR_VALUE_MISSING);
  q.pcrs[0].value[0] ^= 1;
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, ak, alen, q.attest, q.attest_len, q.sig, q.sig_len,
                                               ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count, nonce, 9, 0, &vd),
           ATTEST_RESULT_PCR_DIGEST_MISMATCH);
  q.pcrs[0].value[0] ^= 1;
  raw[8] ^= 1; /* first signature byte */
  CHECK_RC(v, attest_verifier_verify_tpm_quote(v, ak, alen, q.attest, q.attest_len, q.sig, q.sig_len,
                                               ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count, nonce, 9, 0, &vd),
           ATTEST_RESULT_QUOTE_SIGNATURE_INVALID);
  CHECK(vd == NULL);
  attest_verifier_free(v);
  free(raw);
  free(ak);
}

static void azure_bundle(void) {
  size_t hlen, vlen, qlen;
  uint8_t *hcl = read_vector("trustee-az-snp-vtpm/hcl-report.bin", &hlen);
  uint8_t *vcek = read_vector("trustee-az-snp-vtpm/vcek.pem", &vlen);
  uint8_t *raw = read_vector("trustee-az-snp-vtpm/quote.bin", &qlen);
  bincode_quote q;
  parse_bincode(raw, qlen, &q);
  attest_verifier *v = new_verifier(LENIENT);
  attest_verdict *vd = NULL;
  const uint8_t *nonce = (const uint8_t *)"challenge";
  CHECK_RC(v, attest_verifier_verify_azure_snp(v, hcl, hlen, vcek, vlen, q.attest, q.attest_len, q.sig, q.sig_len,
                                               ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count, nonce, 9,
                                               T_2025_06_01, 0, &vd),
           ATTEST_RESULT_OK);
  attest_bytes b;
  attest_tcb tcb;
  CHECK(attest_verdict_kind(vd) == ATTEST_EVIDENCE_KIND_AZURE_SNP);
  CHECK(attest_verdict_pcr(vd, 0, &b) == ATTEST_RESULT_OK && b.data[0] == 0xf3);
  CHECK(attest_verdict_reported_tcb(vd, &tcb) == ATTEST_RESULT_OK && tcb.microcode == 115);
  CHECK(outcome_of(vd, "ak_binding") == ATTEST_OUTCOME_PASSED);
  CHECK(outcome_of(vd, "report_signature") == ATTEST_OUTCOME_PASSED);
  attest_verdict_free(vd);
  vd = NULL;
  CHECK_RC(v, attest_verifier_verify_azure_snp(v, hcl, hlen, vcek, vlen, q.attest, q.attest_len, q.sig, q.sig_len,
                                               ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count,
                                               (const uint8_t *)"egnellahc", 9, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_NONCE_MISMATCH);
  hcl[0x06e0]++; /* inside the runtime data: the report no longer binds it */
  CHECK_RC(v, attest_verifier_verify_azure_snp(v, hcl, hlen, vcek, vlen, q.attest, q.attest_len, q.sig, q.sig_len,
                                               ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count, nonce, 9,
                                               T_2025_06_01, 0, &vd),
           ATTEST_RESULT_AK_BINDING_MISMATCH);
  CHECK(vd == NULL);
  attest_verifier_free(v);
  free(hcl);
  free(vcek);
  free(raw);
}

/* Generated qemu-vtpm documents (fixtures from ffi/tests/c.rs). */
static void documents(const char *dir) {
  char path[4096];
  size_t dlen, mlen, wlen, alen, nlen;
  snprintf(path, sizeof path, "%s/qemu-doc.pb", dir);
  uint8_t *doc = read_path(path, &dlen);
  snprintf(path, sizeof path, "%s/measurements.json", dir);
  uint8_t *m = read_path(path, &mlen);
  snprintf(path, sizeof path, "%s/measurements-wrong.json", dir);
  uint8_t *wrong = read_path(path, &wlen);
  snprintf(path, sizeof path, "%s/ak.tpm2b", dir);
  uint8_t *ak = read_path(path, &alen);
  snprintf(path, sizeof path, "%s/nonce.bin", dir);
  uint8_t *nonce = read_path(path, &nlen);
  const uint8_t *qemu = (const uint8_t *)"qemu-vtpm";
  attest_verifier *v = new_verifier(NULL);
  attest_verdict *vd = NULL;

  CHECK_RC(v, attest_verifier_verify_document(v, qemu, 9, doc, dlen, m, mlen, nonce, nlen, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_AK_NOT_TRUSTED);
  CHECK_RC(v, attest_verifier_pin_ak(v, ak, alen), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_document(v, qemu, 9, doc, dlen, m, mlen, nonce, nlen, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_OK);
  if (vd) {
    attest_str s;
    attest_bytes b;
    CHECK(attest_verdict_kind(vd) == ATTEST_EVIDENCE_KIND_DOCUMENT);
    CHECK(attest_verdict_variant(vd, &s) == ATTEST_RESULT_OK && str_eq(s, "qemu-vtpm"));
    CHECK(attest_verdict_ak_basis(vd, &s) == ATTEST_RESULT_OK && str_eq(s, "pinned"));
    CHECK(outcome_of(vd, "pcr_4") == ATTEST_OUTCOME_PASSED);
    CHECK(outcome_of(vd, "pcr_9") == ATTEST_OUTCOME_WARNED);
    CHECK(outcome_of(vd, "ak_trust") == ATTEST_OUTCOME_PASSED);
    CHECK(attest_verdict_pcr(vd, 4, &b) == ATTEST_RESULT_OK && b.len == 32);
    CHECK(attest_verdict_measurement(vd, &b) == ATTEST_RESULT_NOT_AVAILABLE);
    attest_verdict_free(vd);
    vd = NULL;
  }
  CHECK_RC(v, attest_verifier_verify_document(v, qemu, 9, doc, dlen, wrong, wlen, nonce, nlen, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_PCR_MISMATCH);
  CHECK_RC(v, attest_verifier_verify_document(v, qemu, 9, doc, dlen, m, mlen, (const uint8_t *)"x", 1, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_NONCE_MISMATCH);
  CHECK_RC(v, attest_verifier_verify_document(v, (const uint8_t *)"aws-sev-snp", 11, doc, dlen, m, mlen, nonce, nlen,
                                              T_2025_06_01, 0, &vd),
           ATTEST_RESULT_VARIANT_MISMATCH);
  CHECK_RC(v, attest_verifier_verify_document(v, qemu, 9, doc, dlen, (const uint8_t *)"{}", 2, nonce, nlen,
                                              T_2025_06_01, 0, &vd),
           ATTEST_RESULT_MEASUREMENTS_FILE);
  /* An SNP variant under a policy that pins no launch: refused before anything else is looked at. The
     document (the qemu one relabelled aws-sev-snp) lacks SNP evidence, which is what a pinned or explicitly
     waived policy then finds. */
  size_t alen2;
  snprintf(path, sizeof path, "%s/aws-doc.pb", dir);
  uint8_t *aws = read_path(path, &alen2);
  const uint8_t *aws_name = (const uint8_t *)"aws-sev-snp";
  CHECK_RC(v, attest_verifier_verify_document(v, aws_name, 11, aws, alen2, m, mlen, nonce, nlen, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_LAUNCH_UNPINNED);
  static const char PINNED[] =
      "{\"measurements\": [\"000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000\"]}";
  static const char WAIVED[] = "{\"dangerous_allow_unpinned_launch\": true}";
  for (int i = 0; i < 2; i++) {
    const char *policy = i == 0 ? PINNED : WAIVED;
    CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)policy, strlen(policy)), ATTEST_RESULT_OK);
    CHECK_RC(v, attest_verifier_verify_document(v, aws_name, 11, aws, alen2, m, mlen, nonce, nlen, T_2025_06_01, 0, &vd),
             ATTEST_RESULT_MISSING_EVIDENCE);
  }
  CHECK_RC(v, attest_verifier_set_policy_json(v, (const uint8_t *)"{}", 2), ATTEST_RESULT_OK);
  free(aws);
  /* An empty nonce: refused without the flag; with it, the quote (made for a real nonce) does not match. */
  CHECK_RC(v, attest_verifier_verify_document(v, qemu, 9, doc, dlen, m, mlen, NULL, 0, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_NONCE_REQUIRED);
  CHECK_RC(v, attest_verifier_verify_document(v, qemu, 9, doc, dlen, m, mlen, NULL, 0, T_2025_06_01,
                                              ATTEST_VERIFY_ALLOW_EMPTY_NONCE, &vd),
           ATTEST_RESULT_NONCE_MISMATCH);
  uint8_t junk[3] = {0xff, 0xff, 0xff};
  CHECK_RC(v, attest_verifier_verify_document(v, qemu, 9, junk, 3, m, mlen, nonce, nlen, T_2025_06_01, 0, &vd),
           ATTEST_RESULT_DOCUMENT_MALFORMED);
  CHECK(vd == NULL);
  attest_verifier_free(v);
  free(doc);
  free(m);
  free(wrong);
  free(ak);
  free(nonce);
}

int main(void) {
  const char *fixtures = getenv("ATTEST_FFI_FIXTURES");
  if (fixtures) documents(fixtures);
  else printf("NOTICE: ATTEST_FFI_FIXTURES unset: skipping generated-document tests\n");
  if (have_testdata()) {
    constellation_azure_milan();
    virtee_milan();
    go_sev_guest_debug();
    aws_vlek();
    azure_cvm_tooling_chip_mismatch();
    tpm_quote_azure();
    azure_bundle();
  }
  return finish("vectors");
}
