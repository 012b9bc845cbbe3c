# The two commands of README.md. Each installs what it needs first.
.PHONY: demo demo-snp test setup

setup:
	bash scripts/setup.sh

# The main job: a local attested cluster bootstrap on loopback, Kubernetes as an explicit dry run, then the
# attack section (scripts/demo-cluster.py).
demo: setup
	cargo build --release -q --bin attest --bin key-service --bin join-service --bin attest-bootstrapper
	python3 scripts/demo-cluster.py target/release

# Every SEV-SNP vector of ../shared/testdata through `attest snp verify`, as a table.
demo-snp: setup
	cargo build --release -q -p attest-cli --bin attest
	python3 scripts/demo-snp.py target/release/attest

test: setup
	bash scripts/test.sh
