/* The C column of the side-by-side test (ffi/tests/side-by-side/run.py): one verification through the C
 * library, as a C program written against attest.h would make it, and its outcome on stdout as one JSON
 * line: {"rc": <attest_result>, "result": <attest_verifier_last_result_json, or null when empty>}.
 *
 *   driver KIND INPUT AUX1 AUX2 NONCE_HEX DATA_HEX TIME POLICY_JSON FLAGS VARIANT
 *
 * "-" is "none" (a NULL, 0 argument). KIND, and what AUX1, AUX2 and DATA are for it:
 *   snp             report; VCEK; ASK/ARK chain; expected REPORT_DATA     (POLICY: the SNP policy)
 *   tdx             TD quote; collateral bundle; -; expected REPORTDATA   (POLICY: the TDX policy)
 *   tpm-bincode     az-cvm-vtpm quote bundle; AK; -; -                     (attest_verifier_verify_tpm_evidence)
 *   tpm-parts       the same bundle, split here; AK; -; -                  (attest_verifier_verify_tpm_quote)
 *   tpm-trustee     trustee TPM evidence JSON; -; -; -
 *   azure-parts     HCL report; VCEK; az-cvm-vtpm quote bundle (split); -  (POLICY: the SNP policy)
 *   azure-evidence  trustee Azure evidence JSON; -; -; user-data          (POLICY: the SNP policy)
 *   gce             go-tpm-tools attestation; -; -; -                      (POLICY: the GCE policy)
 *   document        attestation document; measurements; -; -             (VARIANT: its variant)
 * FLAGS is the verify calls' flags word (decimal). Exit status 0 whenever the call was made. */
#include "testutil.h"

typedef struct {
  uint8_t *data;
  size_t len;
} buf;

static buf file_arg(const char *path) {
  buf b = {NULL, 0};
  if (strcmp(path, "-") != 0) b.data = read_path(path, &b.len);
  return b;
}

static buf hex_arg(const char *hex) {
  buf b = {NULL, 0};
  if (strcmp(hex, "-") == 0) return b;
  b.len = strlen(hex);
  b.data = malloc(b.len + 1);
  memcpy(b.data, hex, b.len);
  b.len = unhex(b.data, b.len);
  return b;
}

/* Installs the policy file's JSON with `set` (SNP, TDX or GCE policy); exits 2 when refused. */
static void set_policy(attest_verifier *v, const char *path,
                       attest_result (*set)(const attest_verifier *, const uint8_t *, size_t)) {
  if (strcmp(path, "-") == 0) return;
  buf p = file_arg(path);
  attest_result rc = set(v, p.data, p.len);
  if (rc != ATTEST_RESULT_OK) {
    fprintf(stderr, "driver: policy %s refused (%u)\n", path, rc);
    exit(2);
  }
  free(p.data);
}

int main(int argc, char **argv) {
  if (argc != 11) {
    fprintf(stderr, "usage: driver KIND INPUT AUX1 AUX2 NONCE_HEX DATA_HEX TIME POLICY_JSON FLAGS VARIANT\n");
    return 2;
  }
  const char *kind = argv[1], *policy = argv[8], *variant = argv[10];
  buf in = file_arg(argv[2]), aux1 = file_arg(argv[3]), aux2 = file_arg(argv[4]);
  buf nonce = hex_arg(argv[5]), data = hex_arg(argv[6]);
  uint64_t time = strtoull(argv[7], NULL, 10);
  uint32_t flags = (uint32_t)strtoul(argv[9], NULL, 10);

  attest_verifier *v = NULL;
  if (attest_verifier_new(&v) != ATTEST_RESULT_OK) return 2;
  attest_verdict *vd = NULL;
  attest_result rc;
  bincode_quote q;
  if (strcmp(kind, "snp") == 0) {
    set_policy(v, policy, attest_verifier_set_policy_json);
    rc = attest_verifier_verify_snp(v, in.data, in.len, aux1.data, aux1.len, aux2.data, aux2.len, data.data,
                                    data.len, time, &vd);
  } else if (strcmp(kind, "tdx") == 0) {
    set_policy(v, policy, attest_verifier_set_tdx_policy_json);
    if (attest_verifier_set_tdx_collateral(v, aux1.data, aux1.len, NULL) != ATTEST_RESULT_OK) return 2;
    rc = attest_verifier_verify_td_quote(v, in.data, in.len, data.data, data.len, time, &vd);
  } else if (strcmp(kind, "tpm-bincode") == 0) {
    rc = attest_verifier_verify_tpm_evidence(v, ATTEST_TPM_EVIDENCE_AZ_CVM_VTPM_BINCODE, in.data, in.len,
                                             aux1.data, aux1.len, nonce.data, nonce.len, flags, &vd);
  } else if (strcmp(kind, "tpm-parts") == 0) {
    parse_bincode(in.data, in.len, &q);
    rc = attest_verifier_verify_tpm_quote(v, aux1.data, aux1.len, q.attest, q.attest_len, q.sig, q.sig_len,
                                          ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count, nonce.data,
                                          nonce.len, flags, &vd);
  } else if (strcmp(kind, "tpm-trustee") == 0) {
    rc = attest_verifier_verify_tpm_evidence(v, ATTEST_TPM_EVIDENCE_TRUSTEE_JSON, in.data, in.len, NULL, 0,
                                             nonce.data, nonce.len, flags, &vd);
  } else if (strcmp(kind, "azure-parts") == 0) {
    set_policy(v, policy, attest_verifier_set_policy_json);
    parse_bincode(aux2.data, aux2.len, &q);
    rc = attest_verifier_verify_azure_snp(v, in.data, in.len, aux1.data, aux1.len, q.attest, q.attest_len, q.sig,
                                          q.sig_len, ATTEST_QUOTE_SIGNATURE_RSASSA_SHA256, q.pcrs, q.pcr_count,
                                          nonce.data, nonce.len, time, flags, &vd);
  } else if (strcmp(kind, "azure-evidence") == 0) {
    set_policy(v, policy, attest_verifier_set_policy_json);
    rc = attest_verifier_verify_azure_evidence(v, in.data, in.len, nonce.data, nonce.len, data.data, data.len, time,
                                               flags, &vd);
  } else if (strcmp(kind, "gce") == 0) {
    set_policy(v, policy, attest_verifier_set_gce_policy_json);
    rc = attest_verifier_verify_gce(v, in.data, in.len, nonce.data, nonce.len, time, flags, &vd);
  } else if (strcmp(kind, "document") == 0) {
    set_policy(v, policy, attest_verifier_set_policy_json);
    rc = attest_verifier_verify_document(v, (const uint8_t *)variant, strlen(variant), in.data, in.len, aux1.data,
                                         aux1.len, nonce.data, nonce.len, time, flags, &vd);
  } else {
    fprintf(stderr, "driver: unknown kind %s\n", kind);
    return 2;
  }
  /* The verdict and the result object agree: OK exactly when a verdict was written. */
  if ((rc == ATTEST_RESULT_OK) != (vd != NULL)) {
    fprintf(stderr, "driver: rc %u with%s a verdict\n", rc, vd ? "" : "out");
    return 3;
  }
  size_t n = 0;
  char *json = NULL;
  if (attest_verifier_last_result_json(v, NULL, 0, &n) == ATTEST_RESULT_INSUFFICIENT_SIZE && n > 0) {
    json = malloc(n);
    if (attest_verifier_last_result_json(v, json, n, &n) != ATTEST_RESULT_OK) return 3;
  } else {
    n = 0;
  }
  printf("{\"rc\": %u, \"result\": %.*s}\n", rc, n ? (int)n : 4, n ? json : "null");
  free(json);
  attest_verdict_free(vd);
  attest_verifier_free(v);
  free(in.data), free(aux1.data), free(aux2.data), free(nonce.data), free(data.data);
  return failures;
}
