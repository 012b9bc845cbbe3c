# The two commands of README.md. Each installs what it needs first.
.PHONY: demo demo-snp test setup images crash-matrix

setup:
	bash scripts/setup.sh

# The main job: a local attested cluster bootstrap on loopback, Kubernetes as an explicit dry run, then the
# attack section and the nodes' later life (scripts/demo-cluster.py). The two SNP attacks of the plain demo run
# against SIMULATED aws-sev-snp hardware, so the test-root build (below) is made for every demo.
# VARIANT=azure-sev-snp | aws-sev-snp | gcp-sev-snp runs it on SIMULATED SEV-SNP hardware whose reports a test
# root signs (scripts/demo_variants.py): those binaries are built with the feature dangerous-test-roots into a
# target directory of their own, so the release binaries in target/release never trust a test root.
# VARIANT=qemu-tdx | azure-tdx runs it on SIMULATED Intel TDX hardware the same way: a TD per node
# (`attest-hwsim tdx serve`), its quotes signed through an Intel-like test root; qemu-tdx has no vTPM (the node
# lock lives in RTMR3), azure-tdx's vTPM is provisioned by the simulated paravisor.
VARIANT ?= qemu-vtpm
SIMULATED_FEATURES = attest-cli/dangerous-test-roots,attest-joinservice/dangerous-test-roots,attest-bootstrapper/dangerous-test-roots
demo: setup
	cargo build --release -q --target-dir target/simulated --features $(SIMULATED_FEATURES) \
		--bin attest --bin key-service --bin join-service --bin attest-bootstrapper --bin attest-hwsim
ifeq ($(VARIANT),qemu-vtpm)
	cargo build --release -q --bin attest --bin key-service --bin join-service --bin attest-bootstrapper
	python3 scripts/demo-cluster.py target/release --snp-attacks target/simulated/release
else
	python3 scripts/demo-cluster.py target/simulated/release --variant $(VARIANT)
endif

# Every SEV-SNP vector of ../shared/testdata through `attest snp verify`, as a table.
demo-snp: setup
	cargo build --release -q -p attest-cli --bin attest
	python3 scripts/demo-snp.py target/release/attest

test: setup
	bash scripts/test.sh

# OCI images of the key service and the join service (and the bootstrapper's tarball for node images) from
# the release binaries, daemonless and reproducible: target/images/ (scripts/images.sh; README.md, "Deploy to
# a cluster"). IMAGE_REGISTRY and IMAGE_TAG choose the references (default ghcr.io/attest, v<version>).
images: setup
	cargo build --release -q --bin key-service --bin join-service --bin attest-bootstrapper
	bash scripts/images.sh --bin-dir target/release --out target/images

# The crash matrix alone (scripts/test.sh runs it too): every persistence point of init, join, rejoin, recovery
# and reset, killed (SIGKILL) and power-cut, plus the join and key services killed mid-join. Needs root.
crash-matrix: setup
	cargo build -q --target-dir target/fault --features attest-bootstrapper/fault-injection,attest-joinservice/fault-injection,attest-keyservice/fault-injection \
		--bin attest --bin attest-bootstrapper --bin join-service --bin key-service
	python3 scripts/crash-matrix.py target/fault/debug
