#define _GNU_SOURCE
/* Intel TDX through the C API on the real vectors of $ATTEST_TESTDATA: collateral installation (the shared
 * JSON bundle), TD quote verification with the verdicts the READMEs state (oracle dcap-qvl 0.7.1), the TDX
 * verdict accessors, the result codes of rejections and tampered copies, and argument checks. */
#include "testutil.h"

#define T_2023_06_10 1686355200ull
#define T_2023_07_01 1688169600ull
#define T_2023_07_20 1689811200ull

static attest_verifier *verifier_with(const char *bundle_rel) {
  attest_verifier *v = NULL;
  CHECK_RC(NULL, attest_verifier_new(&v), ATTEST_RESULT_OK);
  size_t len;
  uint8_t *bundle = read_vector(bundle_rel, &len);
  attest_tdx_collateral_info info;
  memset(&info, 0xAA, sizeof info);
  CHECK_RC(v, attest_verifier_set_tdx_collateral(v, bundle, len, &info), ATTEST_RESULT_OK);
  free(bundle);
  return v;
}

static attest_result set_policy(attest_verifier *v, const char *json) {
  return attest_verifier_set_tdx_policy_json(v, (const uint8_t *)json, strlen(json));
}

static attest_outcome outcome_of(const attest_verdict *vd, const char *name) {
  attest_outcome o = 99;
  if (attest_verdict_check_outcome(vd, (const uint8_t *)name, strlen(name), &o) != ATTEST_RESULT_OK) return 99;
  return o;
}

/* trustee's tdx_quote_4: a debug TD on the SPR platform, UpToDate under go-tdx-guest's collateral. */
static void quote_4(void) {
  size_t qlen;
  uint8_t *quote = read_vector("trustee-tdx/tdx_quote_4.dat", &qlen);
  attest_verifier *v = verifier_with("go-tdx-guest/collateral_SPR_E4.json");
  attest_verdict *vd = NULL;

  /* The strict default refuses a debug TD. */
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_POLICY_TDX_DEBUG);
  CHECK(vd == NULL);
  CHECK(attest_result_is_policy_error(ATTEST_RESULT_POLICY_TDX_DEBUG));

  CHECK_RC(v, set_policy(v, "{\"allow_debug\": true}"), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_OK);
  if (vd) {
    attest_str s;
    attest_bytes b;
    CHECK(attest_verdict_accepted(vd));
    CHECK(attest_verdict_kind(vd) == ATTEST_EVIDENCE_KIND_TD_QUOTE);
    CHECK(attest_verdict_tdx_tcb_status(vd, &s) == ATTEST_RESULT_OK && str_eq(s, "UpToDate"));
    CHECK(attest_verdict_tdx_advisory_count(vd) == 0);
    CHECK(attest_verdict_tdx_advisory_id(vd, 0, &s) == ATTEST_RESULT_NOT_AVAILABLE);
    static const uint8_t FMSPC[6] = {0x50, 0x80, 0x6f, 0x00, 0x00, 0x00};
    CHECK(attest_verdict_tdx_fmspc(vd, &b) == ATTEST_RESULT_OK && b.len == 6 && memcmp(b.data, FMSPC, 6) == 0);
    /* The TD report body: MRTD at 136 (the quote's offset 184), REPORTDATA at 520. */
    CHECK(attest_verdict_td_report(vd, &b) == ATTEST_RESULT_OK && b.len == 584);
    CHECK(memcmp(b.data + 136, quote + 184, 48) == 0 && b.data[136] == 0x70 && b.data[137] == 0x5e);
    CHECK(memcmp(b.data + 520, quote + 48 + 520, 64) == 0);
    CHECK(outcome_of(vd, "quote_signature") == ATTEST_OUTCOME_PASSED);
    CHECK(outcome_of(vd, "revocation") == ATTEST_OUTCOME_PASSED);
    CHECK(outcome_of(vd, "debug") == ATTEST_OUTCOME_WAIVED);
    CHECK(outcome_of(vd, "mrtd") == ATTEST_OUTCOME_WAIVED);
    CHECK(attest_verdict_check_count(vd) == 35); /* every TDX check, the five TD-attribute groups among them */
    /* SNP accessors have nothing to say about a TD quote. */
    CHECK(attest_verdict_measurement(vd, &b) == ATTEST_RESULT_NOT_AVAILABLE);
    CHECK(attest_verdict_variant(vd, &s) == ATTEST_RESULT_NOT_AVAILABLE);
    attest_verdict_free(vd);
    vd = NULL;
  }

  /* The expected REPORTDATA: equal passes; one flipped byte is the report_data policy check; a short one
   * is never padded. */
  uint8_t rd[64];
  memcpy(rd, quote + 48 + 520, 64);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, rd, 64, T_2023_07_01, &vd), ATTEST_RESULT_OK);
  attest_verdict_free(vd);
  vd = NULL;
  rd[63] ^= 1;
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, rd, 64, T_2023_07_01, &vd), ATTEST_RESULT_POLICY_TDX_REPORT_DATA);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, rd, 63, T_2023_07_01, &vd), ATTEST_RESULT_MISUSE);

  /* An MRTD allow-list that does not hold it. */
  char policy[256];
  snprintf(policy, sizeof policy, "{\"allow_debug\": true, \"mrtd\": [\"%096d\"]}", 0);
  CHECK_RC(v, set_policy(v, policy), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_POLICY_TDX_MRTD);
  CHECK_RC(v, set_policy(v, "{\"allow_debug\": true}"), ATTEST_RESULT_OK);

  /* Tampered copies: MRTD, the quote signature, the QE report. */
  size_t offsets[3] = {184, 48 + 584 + 4, 48 + 584 + 4 + 64 + 64 + 6 + 0x30};
  attest_result want[3] = {ATTEST_RESULT_TD_QUOTE_SIGNATURE_INVALID, ATTEST_RESULT_TD_QUOTE_SIGNATURE_INVALID,
                           ATTEST_RESULT_QE_REPORT_SIGNATURE_INVALID};
  for (int i = 0; i < 3; i++) {
    quote[offsets[i]] ^= 1;
    CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 0, T_2023_07_01, &vd), want[i]);
    CHECK(attest_result_is_tdx_error(want[i]) && attest_result_is_evidence_error(want[i]));
    quote[offsets[i]] ^= 1;
  }
  CHECK(vd == NULL);

  /* Outside the collateral's window. */
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 0, T_2023_07_20, &vd), ATTEST_RESULT_COLLATERAL_EXPIRED);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 0, T_2023_06_10, &vd), ATTEST_RESULT_COLLATERAL_NOT_YET_VALID);

  /* Argument checks; a policy that does not parse leaves the old one. */
  CHECK_RC(v, attest_verifier_verify_td_quote(v, NULL, 0, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 0, T_2023_07_01, NULL), ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 5, T_2023_07_01, &vd), ATTEST_RESULT_NULL_PARAMETER);
  CHECK(attest_verifier_verify_td_quote(NULL, quote, qlen, NULL, 0, T_2023_07_01, &vd) == ATTEST_RESULT_NULL_PARAMETER);
  CHECK_RC(v, set_policy(v, "{\"accepted_tcb_statuses\": [\"Revoked\"]}"), ATTEST_RESULT_POLICY_FILE);
  CHECK_RC(v, set_policy(v, "{\"no_such_key\": 1}"), ATTEST_RESULT_POLICY_FILE);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, quote, qlen, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_OK);
  attest_verdict_free(vd);
  attest_verifier_free(v);
  free(quote);
}

/* go-tdx-guest's SPR_E4 quote (39 junk bytes after it; below every TCB level), platforms without
 * collateral, and collateral that does not verify. */
static void rejections(void) {
  size_t len;
  attest_verifier *v = verifier_with("go-tdx-guest/collateral_SPR_E4.json");
  attest_verdict *vd = NULL;
  uint8_t *spr = read_vector("go-tdx-guest/tdx_prod_quote_SPR_E4.dat", &len);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, spr, len, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_POLICY_TDX_TRAILING_BYTES);
  CHECK_RC(v, set_policy(v, "{\"trailing_bytes\": \"any\"}"), ATTEST_RESULT_OK);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, spr, len, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_TCB_LEVEL_NOT_FOUND);
  free(spr);

  const char *others[3] = {"trustee-tdx/tdx_quote_6.dat", "go-tdx-guest/ccel/cos-113-tdx-quote.dat",
                           "trustee-az-tdx-vtpm/td-quote.bin"};
  for (int i = 0; i < 3; i++) {
    uint8_t *q = read_vector(others[i], &len);
    CHECK_RC(v, attest_verifier_verify_td_quote(v, q, len, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_COLLATERAL_MISSING);
    free(q);
  }
  uint8_t *junk = read_vector("go-tdx-guest/report.dat", &len);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, junk, len, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_TDX_UNSUPPORTED);
  free(junk);
  CHECK(vd == NULL);

  /* Collateral: not a bundle; a QE Identity signature flipped (the installed set stays). */
  CHECK_RC(v, attest_verifier_set_tdx_collateral(v, (const uint8_t *)"{}", 2, NULL), ATTEST_RESULT_COLLATERAL_MALFORMED);
  uint8_t *bundle = read_vector("go-tdx-guest/collateral_SPR_E4.json", &len);
  static const char KEY[] = "\"qe_identity_signature\": \"";
  char *sig = memmem(bundle, len, KEY, sizeof KEY - 1);
  CHECK(sig != NULL);
  if (sig) {
    char *hex = sig + sizeof KEY - 1;
    *hex = *hex == '0' ? '1' : '0';
    CHECK_RC(v, attest_verifier_set_tdx_collateral(v, bundle, len, NULL), ATTEST_RESULT_COLLATERAL_SIGNATURE_INVALID);
  }
  free(bundle);
  CHECK_RC(v, attest_verifier_set_tdx_collateral(v, NULL, 0, NULL), ATTEST_RESULT_NULL_PARAMETER);
  attest_verifier_free(v);

  /* The v5 sample's shipped collateral has no common window (2026 TCB Info, 2023 CRLs). */
  v = verifier_with("go-tdx-guest/collateral_v5_sample.json");
  uint8_t *v5 = read_vector("go-tdx-guest/quote_v5_sample.dat", &len);
  CHECK_RC(v, attest_verifier_verify_td_quote(v, v5, len, NULL, 0, T_2023_07_01, &vd), ATTEST_RESULT_COLLATERAL_NOT_YET_VALID);
  free(v5);
  attest_verifier_free(v);
}

int main(void) {
  if (have_testdata()) {
    quote_4();
    rejections();
  }
  return finish("tdx");
}
